"""placeholder"""
def threshold(mode): return 0.0
def score_candidates(cands, terms, mode): return {r: 0.5 for r in cands}
