"""Pieces every other `qt` package may use, with no knowledge of the session: the task runner
that adapts the core's long work (`workers`), the child process (`child_process`), the words the
window shows (`messages`), the plots' style and menu (`plots`, `plot_menu`), the palettes, a
widget built when first shown (`built_when_shown`), and the table model of scored pairs
(`results_model`, with `document_pairs`: every pair of a document set as columns).

Imports nothing else of `qt`.
"""
