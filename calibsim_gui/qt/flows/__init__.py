"""The flows of File ▸ …: a question (dialog), then long work in the flow's own task runner,
then its result shown: Export (`export_flow`, `export_dialog`), Compare with another model and
Find a threshold (`compare_flow`), human calibration (`human_flow`).

May import `views`, `editors`, `session` and `widgets`; never the shell.
"""
