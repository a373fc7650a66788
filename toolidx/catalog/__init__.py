"""Reading what the index holds, without ranking: pages of tools and category counts
(`listing`), one tool in detail (`describe`), and nearest neighbours of a tool (`similar`).
"""
