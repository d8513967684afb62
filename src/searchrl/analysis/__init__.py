"""searchrl.analysis: what reads the run records — per-step diagnostics and the collapse monitor's rules, the HTML
report, `searchrl compare` across algorithms and seeds, and the search-again decision analysis.

The trainer calls `diagnostics` and `monitor` on each step's tensors and metrics row; everything else here reads
the files a run leaves (metrics.jsonl, evals.json, summary.json). Nothing here trains.
"""
