"""The session as a project: what is unsaved, saving, opening and re-creating a project (its view
choices and layout last, once its results are shown), and restoring the session an autosave kept."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox

from calibsim_gui.core.analysis.project import Project, json_safe
from calibsim_gui.core.embedding.devices import embedder_engine, embedder_precision
from calibsim_gui.core.embedding.models import choose_engine
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.references.anchors import builtin_anchors
from calibsim_gui.qt.widgets.messages import for_the_app
from calibsim_gui.qt.session.preferences import user_folder


class LaterState:
    """A tab's view state to take where the project is serialised (the autosave's worker), not on
    the GUI thread: `make()` reads only objects that do not change once made (a comparison of
    100,000 pairs takes ~0.4 s to put in JSON form)."""

    def __init__(self, make):
        self.make = make


def taken_views(views: dict) -> dict:
    """`views` with each `LaterState` taken, plain JSON only."""
    taken = {name: state.make() if isinstance(state, LaterState) else state for name, state in views.items()}
    return {name: state for name, state in taken.items() if isinstance(state, dict) and json_safe(state)}


def snapshot(project) -> str:
    """The parts of a project that are the user's work (not view choices) as one string."""
    data = project.to_dict()
    data.pop("views", None)
    data.pop("layout", None)
    settings = data.pop("settings", {})
    keep = {k: settings[k] for k in ("anchor_edits", "label_column", "label_scale", "long_texts") if k in settings}
    return json.dumps({**data, "settings": keep}, sort_keys=True, default=str)


class Projects(QObject):
    """Saves the window's session as a `Project` and re-creates one, step by step, in its runs.

    `saved_changed` is emitted when the project's file or what counts as saved changes;
    `views_restored` once a re-created project's view choices are all restored."""

    saved_changed = Signal()
    views_restored = Signal()

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.session = window.session
        self.path: str | None = None                  # the project's file
        self.saved_snapshot: str | None = None        # what the saved/opened project holds (see unsaved_work)
        self.resnapshot = False                       # take the snapshot again once a project is re-created
        self.pending_project = None                   # a project waiting for its model
        self.step = None                              # ("rebuild" | "anchors", project) waiting for a run
        self.pending_views = None                     # a project whose views wait for its results
        self.restoring: dict | None = None            # the view choices left to restore, and the notes
        self.restore_box: QMessageBox | None = None
        self.builtin_anchors = builtin_anchors()      # read once: the title asks for the project often

    # ------------------------------------------------------------------ unsaved work

    def unsaved_work(self) -> list[str]:
        """What this session holds that no saved project keeps, in words (empty: nothing)."""
        project = self.current_project(later=True)          # the snapshot leaves the views out
        if self.saved_snapshot is not None and snapshot(project) == self.saved_snapshot:
            return []
        what = []
        if project.inputs:
            what.append("the input " + ", ".join(Path(i.path).name for i in project.inputs))
        if "anchor_edits" in project.settings or project.anchors is not None:
            what.append("your anchor edits")
        if project.human is not None:
            what.append("the human calibration")
        if project.background_files:
            what.append("the background built from your files")
        return what

    def ask_unsaved(self, action: str, what: list[str]) -> str:
        """Save / Discard / Cancel before `action`; returns "save", "discard" or "cancel"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Unsaved changes",
                          f"This session has unsaved work: {', '.join(what)}.\n\n"
                          f"Save it as a project before {action}?",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self.window)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(answer, "cancel")

    def confirm_discard(self, action: str, what: list[str] | None = None) -> bool:
        """True when `action` may go on: nothing unsaved, the user saved, or chose to discard."""
        window = self.window
        if not window.ask_before_discarding:
            return True
        if what is None:
            try:
                what = window.unsaved_work()
            except Exception:           # never let a bug in the check keep the window from closing
                what = []
        if not what:
            return True
        answer = window.ask_unsaved(action, what)
        if answer == "save":
            return self.save()
        return answer == "discard"

    def results_changed(self) -> None:
        """Once a project is re-created, the session is the project as the app holds it
        (e.g. columns now named): that is what counts as saved; its views are restored then."""
        if self.pending_project is not None or self.window.profile_runner.running:
            return
        self.restore_views()
        if self.resnapshot:
            self.resnapshot = False
            self.saved_snapshot = snapshot(self.current_project(later=True))
            self.saved_changed.emit()

    def view_states(self, *, later: bool = False) -> dict:
        """``{tab name: tab.view_state()}`` of every tab with view choices (plain JSON only); a tab
        whose restored choices wait for their turn (`restore_views`) gives those.

        `later`: a tab that offers ``view_state_later()`` (a function that takes its state from
        objects that do not change once made) gives a `LaterState` instead, to be taken off the
        GUI thread by `taken_views`."""
        views = {}
        waiting = self.restoring["views"] if self.restoring is not None else {}
        for widget in self.window.panels.widgets():
            name = widget.objectName()
            if name in waiting:
                views[name] = waiting[name]
                continue
            if later and name and callable(getattr(widget, "view_state_later", None)):
                views[name] = LaterState(widget.view_state_later())
                continue
            state = widget.view_state() if callable(getattr(widget, "view_state", None)) else None
            if name and isinstance(state, dict) and json_safe(state):
                views[name] = state
        return views

    def restore_views(self) -> None:
        """The waiting project's layout, then each tab's view choices, one tab per turn of the
        event loop (a tab not built yet is built in a turn of its own before), so that the window
        answers in between: restoring them all at once held it ~0.9 s (#44). What could not be used
        is said in one message naming the project's file once all are done (`views_restored`)."""
        project, self.pending_views = self.pending_views, None
        if project is None:
            return
        self.window.panels.restore(project.layout)
        going = self.restoring is not None            # another project's steps: these replace them
        self.restoring = {"views": dict(project.views), "notes": list(project.notes)}
        if not going:
            QTimer.singleShot(0, self, self.restore_next)

    def restore_next(self) -> None:
        """One step of `restore_views`: build the next tab, or restore its choices, or end."""
        restoring = self.restoring
        if restoring is None:
            return
        if restoring["views"]:
            name, state = next(iter(restoring["views"].items()))
            panels = self.window.panels
            if name in panels.waiting:
                panels.view(name)                     # its choices in the next turn
            else:
                del restoring["views"][name]
                self.restore_tab(panels.view(name), name, state, restoring["notes"])
            QTimer.singleShot(0, self, self.restore_next)
            return
        self.restoring = None
        if restoring["notes"]:
            where = self.path or "the restored session"
            self.window.show_message(QMessageBox.Icon.Information, "Some view choices left out",
                                     f"{where}: {'; '.join(restoring['notes'])} could not be used and were "
                                     "left at their defaults. Save the project again to keep the views "
                                     "as they are now.")
        self.views_restored.emit()

    @staticmethod
    def restore_tab(widget, name: str, state, notes: list[str]) -> None:
        """`widget`'s view choices from `state`; a refusal is added to `notes`."""
        if widget is None or not callable(getattr(widget, "restore_view_state", None)):
            return                       # a tab this version does not have, or without view choices
        try:
            widget.restore_view_state(state)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            notes.append(f"the view choices of the {name!r} tab ({exc})")

    # ------------------------------------------------------------------ saving

    def current_project(self, *, later: bool = False):
        """The session as a `Project`; `later`: costly view states left as `LaterState` (see
        `view_states`), for the autosave's worker or for what ignores the views."""
        state, window = self.state, self.window
        anchors = state.profile.anchors if state.profile is not None else window.anchors.anchor_set()
        edits = window.anchors.pending_edits()
        model = None
        if state.model_info is not None and state.model_info.source != "built-in":
            model = str(state.model_info.path)
        built = state.built_from or {"files": [], "pairs": window.background.pairs(),
                                       "seed": window.background.seed()}
        embedder = state.embedder
        return Project(model=model, device=state.device,
                       engine=None if embedder is None else embedder_engine(embedder),
                       precision=None if embedder is None else embedder_precision(embedder),
                       background_options=dict(built.get("options", {})),
                       anchors=None if anchors == self.builtin_anchors else anchors,
                       profile=state.profile_path, background_files=built["files"],
                       background_pairs=built["pairs"], background_seed=built["seed"],
                       inputs=state.saved_inputs(), human=state.saved_human(), bands=state.saved_bands(),
                       views=self.view_states(later=later), layout=self.window.panels.state(),
                       settings={"metric": state.metric, "form": state.form, "geometry": state.geometry,
                                 "long_texts": window.long_text_options(),
                                 **state.saved_labels(), **({"anchor_edits": edits.to_dict()} if edits else {})})

    def save(self) -> bool:
        """Save to the project's file (asks for one the first time); True once saved."""
        if self.path is None:
            return self.save_as()
        return self.write(self.path)

    def save_as(self) -> bool:
        """Ask where to save: the project's file, else the last project folder or Documents."""
        start = self.path or str(Path(user_folder(self.window.settings, "projects/last_dir")) / "study.calibsim")
        path, _ = QFileDialog.getSaveFileName(self.window, "Save project", start, "calibsim projects (*.calibsim)")
        if path:
            return self.write(path if path.endswith(".calibsim") else path + ".calibsim")
        return False

    def write(self, path: str) -> bool:
        project = self.current_project()
        try:
            project.save(path)
        except (OSError, CalibsimError) as exc:
            self.window.show_error("Project not saved", f"{path}: {exc}")
            return False
        self.saved_snapshot = snapshot(project)
        self.path = path
        self.window.settings.setValue("projects/last_dir", str(Path(path).resolve().parent))
        self.window.menus.remember_recent(path)
        self.window.status_label.setText(f"Saved project {path}")
        self.saved_changed.emit()
        return True

    # ------------------------------------------------------------------ opening

    def choose(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open project", user_folder(self.window.settings,
                                              "projects/last_dir"), "calibsim projects (*.calibsim)")
        if path:
            self.open(path)

    def open(self, path: str) -> None:
        """Restore a saved project: model, anchors, references, inputs and view choices."""
        try:
            project = Project.load(path)
        except CalibsimError as exc:
            self.window.show_error("Cannot open project", str(exc))
            return
        for missing in project.missing_files():
            found, _ = QFileDialog.getOpenFileName(self.window, f"Locate moved file {Path(missing).name}",
                                                   str(Path(path).parent))
            if found:
                project.relocate(missing, found)
        still_missing = project.missing_files()
        if still_missing:
            self.window.show_error("Some project files were not found",
                                   "These files were not found and were left out:\n"
                                   + "\n".join(str(p) for p in still_missing)
                                   + "\n\nOpen the project again to locate them, or add them with "
                                     "File ▸ Open input.")
        self.window.menus.remember_recent(path)
        self.start(project, path)

    def start(self, project, path: str | None, *, from_file: bool = True) -> None:
        """Re-create `project` (saved at `path`, if anywhere): view, background, model, then the rest.

        `from_file` False: a restored autosave, unsaved work even when it was once saved at `path`.
        An engine this machine cannot run is asked about first (Cancel leaves the session as it is).
        """
        runs_here = self.engine_usable(project)
        if runs_here is None:
            return
        background = self.window.background
        self.path = path
        self.pending_project = project
        self.saved_snapshot = snapshot(project) if from_file and path else None
        # once re-created, the session is the project as the app holds it (e.g. columns now named)
        self.resnapshot = bool(from_file and path)
        self.pending_views = project                   # shown once its results are (results_changed)
        self.saved_changed.emit()
        self.state.set_view(metric=project.settings.get("metric", "cosine"),
                            form=project.settings.get("form", "calibrated"))
        self.state.geometry = project.settings.get("geometry", "none")     # used by the next scoring
        self.window.preferences.restore_long_texts(project.settings.get("long_texts", {}))
        background.set_options(project.background_pairs, project.background_seed)
        if project.background_files:
            background.clear()
            background.set_read_options(**project.background_options)     # HTML cleaning included
            background.add_paths([f for f in project.background_files if Path(f).exists()])
        wanted, current, embedder = project.model, self.state.model_info, self.state.embedder
        same_run = embedder is not None and project.engine in (None, embedder_engine(embedder)) \
            and project.precision in (None, embedder_precision(embedder))
        if project.engine is not None and not same_run and runs_here:
            self.window.models.choose_engine(project.engine, project.precision or "float32")
        if same_run and ((wanted is None and current is not None and current.source == "built-in")
                         or (wanted is not None and current is not None and str(current.path) == wanted)):
            self.continue_project()
        else:
            self.session.load_model(wanted, project.device)      # model_loaded continues the project

    def engine_usable(self, project) -> bool | None:
        """True when this machine runs the project's engine and precision (or it names none);
        otherwise ask whether to go on with the Model tab's choice (False) or not open it (None)."""
        if project.engine is None:
            return True
        try:
            choose_engine(project.engine, project.device, project.precision or "float32")
        except CalibsimError as exc:
            box = QMessageBox(QMessageBox.Icon.Warning, "Engine not available",
                              f"The project's scores were made with {project.engine} in "
                              f"{project.precision or 'float32'}, which this machine cannot run.\n\n"
                              "Open it with the Model tab's engine? Scores may then differ slightly "
                              "from the saved ones.", QMessageBox.StandardButton.Open
                              | QMessageBox.StandardButton.Cancel, self.window)
            box.setDetailedText(for_the_app(str(exc)))
            return False if box.exec() == QMessageBox.StandardButton.Open else None
        return True

    def offer_restore(self) -> None:
        """A previous session ended without closing: offer its autosaved project (non-modal)."""
        project = self.window.autosaver.pending()
        if project is None:
            return
        names = ", ".join([Path(i.path).name for i in project.inputs]
                          + (["unapplied anchor edits"] if "anchor_edits" in project.settings else []))
        box = QMessageBox(QMessageBox.Icon.Question, "Restore the last session?",
                          f"calibsim did not close normally last time. Restore that session ({names})?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self.window)
        box.setModal(False)
        box.finished.connect(self.restore_answered)
        box.show()
        self.restore_box = box

    def restore_answered(self, answer: int) -> None:
        project = self.window.autosaver.pending()
        self.restore_box = None
        if answer == QMessageBox.StandardButton.Yes and project is not None:
            self.start(project, project.settings.get("saved_as"), from_file=False)
            self.window.status_label.setText("Restored the last session.")
        else:
            self.window.autosaver.discard()

    def continue_project(self) -> None:
        """Second half of `open`, once its model is loaded: references, then inputs.

        Steps that wait for a run to end are kept in ``step`` and taken by the slots that
        receive that run's result (no temporary signal connections).
        """
        project, self.pending_project = self.pending_project, None
        if project is None:
            return
        session, window = self.session, self.window
        if project.anchors is not None:
            window.anchors.set_anchor_set(project.anchors)
        references = self.state.start_project(project)     # its labels, bands, anchor edits wait
        if self.state.human is not None:
            window.menus.save_human_action.setEnabled(True)
        window.score_runner.cancel()      # a run with the old references must not be shown
        if references == "profile":
            session.open_profile(project.profile)
        elif references == "rebuild":
            # the background was built, not saved: build it again (same files, pairs and seed); the
            # built-in references a new model started must not settle the project (nor replace its
            # anchor ladder) when they arrive before its background is read
            window.profile_runner.cancel()
            self.step = ("rebuild", project)
            if not window.background.runner.running:
                self.background_read()
        else:
            # the built-in reference, with the project's anchors (if any) applied when it is ready
            self.step = ("anchors", project) if references == "anchors" else None
            session.use_builtin_reference()
        usable = [i for i in project.inputs if Path(i.path).exists()]
        if not usable:
            self.restore_views()             # no results to wait for
        else:
            first = usable[0]
            options = dict(first.options)
            if first.kind == "pairs":
                session.read_pairs(first.path, options)
            else:
                per_file = bool(options.pop("per_file", False))
                session.read_documents([i.path for i in usable], {**options, "per_file": per_file})

    def take_step(self, kind: str) -> bool:
        """Run the waiting project step if it is of `kind`; True if one ran."""
        step = self.step
        if step is None or step[0] != kind:
            return False
        self.step = None
        project = step[1]
        if kind == "anchors":
            self.session.apply_anchors(project.anchors)
            return True
        background = self.window.background
        leftovers = background.html_leftovers()
        if leftovers and "clean_html" not in project.background_options and not background.clean_html.isChecked():
            answer = QMessageBox.question(      # an older project: it did not say whether it cleaned them
                self.window, "Clean the background's HTML?",
                f"The project's background files hold HTML leftovers ({leftovers.describe()}), and the "
                "project does not say whether they were cleaned before building (it was saved by an "
                "older calibsim). Clean them before building? The background percentiles differ either way.")
            background.clean_html.setChecked(answer == QMessageBox.StandardButton.Yes)
        documents = background.documents()
        if documents is None:       # none to build: the references in use, else the built-in ones
            if self.state.profile is None:       # (a new model) with the project's anchors
                self.step = ("anchors", project) if project.anchors is not None else None
                self.session.use_builtin_reference()
            else:
                self.session.references_settled()
            self.window.show_error("Background not rebuilt", "The project's background files could not "
                                   "be read; see the Background tab.")
            return True
        self.session.build_background(documents, project.background_pairs, project.background_seed)
        return True

    def background_read(self, _documents=None) -> None:
        self.take_step("rebuild")
