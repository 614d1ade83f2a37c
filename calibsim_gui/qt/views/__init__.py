"""The tabs that show results, one module or package per view: Results (`results`),
Distributions (`distributions`), Agreement, Compare, Heatmap (`heatmap`), Text map (`map`), Space,
Search, Welcome (`first_run`) and the Threshold dialog.

Views are independent of one another (a shared piece goes to `widgets`) and may import
`session` and `widgets`; never `editors`, `flows` or the shell.
"""
