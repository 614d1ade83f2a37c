"""The flows of File ▸ …: a question (dialog), then long work in the flow's own task runner,
then its result shown: Compare with another model and Find a threshold (`compare_flow`), human
calibration (`human_flow`), Export (`export_flow`; its dialog and writing, shared with the
Search tab, are `session.exports`). A flow receives the parts it uses, not the window; the window
is only its dialogs' parent.

May import `views`, `editors`, `session` and `widgets`; never the shell.
"""
