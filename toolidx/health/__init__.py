"""Is this install, its model, a config and an index fit to use? `doctor` checks each and says,
per problem, what to do. Reads only: nothing is written, no server is started.
"""
