"""Model manager: the models on disk, the device, precision and prompt to run with, and which model is loaded."""

from __future__ import annotations

import hashlib
import html
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QFont, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.embedding.devices import (
    DEFAULT_PRECISION,
    available_devices,
    embedder_engine,
    embedder_precision,
)
from calibsim_gui.core.embedding.model_folders import (
    ModelInfo,
    discover_models,
    fingerprint_folder,
    inspect_model_folder,
)
from calibsim_gui.core.embedding.models import UNVERIFIED_NOTE
from calibsim_gui.core.embedding.prompts import PromptSettings, choose_prompts
from calibsim_gui.core.errors import ModelError
from calibsim_gui.qt.widgets.workers import TaskRunner

SETTINGS_KEY = "models/folders"
PRECISION_KEY = "models/precision"
PROMPT_KEY = "models/prompt"        # + "/" + a digest of the model folder: "default", "none" or "name:<name>"
DEVICES = (("auto", "Auto"), ("cpu", "CPU"), ("cuda", "CUDA"), ("mps", "MPS"))
PRECISIONS = (("float32", "float32 (reproducible)"), ("auto", "Auto (faster where native)"),
              ("bfloat16", "bfloat16 (PyTorch)"), ("int8", "int8 (ONNX Runtime)"))
ENGINES = (("auto", "Auto"), ("onnx", "ONNX Runtime (CPU)"), ("torch", "PyTorch"))
ENGINE_KEY = "models/engine"
ENGINE_NAMES = {"onnx": "ONNX Runtime", "torch": "PyTorch"}
COLUMNS = ("Name", "Source", "Dimension", "Max tokens", "Size (MB)", "Fingerprint")
_NUMERIC = {2, 3, 4}


def remembered_folders() -> list[str]:
    """Model folders the user added, as remembered in QSettings."""
    return [str(f) for f in QSettings("calibsim", "calibsim").value(SETTINGS_KEY, [], type=list)]


def refusal(info: ModelInfo) -> str | None:
    """Why the app will not load `info`, or None if it can."""
    if info.needs_remote_code:
        return ("it needs custom code from its folder (trust_remote_code), which calibsim "
                "never runs")
    if not info.safe_weights:
        return ("its weights are stored only as pickles (*.bin), which can run code when "
                "loaded; convert them to safetensors, or if you trust the folder load it from "
                "the command line with --allow-pickle")
    return None


def _key(path) -> Path:
    return Path(path).resolve()


def _prompt_setting_key(info: ModelInfo) -> str:
    return f"{PROMPT_KEY}/{hashlib.sha256(str(_key(info.path)).encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def remembered_prompt(info: ModelInfo) -> str:
    """The prompt choice remembered for `info`'s folder: "default", "none" or "name:<name>"."""
    return QSettings("calibsim", "calibsim").value(_prompt_setting_key(info), "default", type=str)


def prompt_settings(info: ModelInfo, choice: str | None = None) -> PromptSettings:
    """The prompts to load `info` with, from `choice` (default: the one remembered for it); a
    remembered name the folder no longer declares falls back to the folder's default."""
    choice = remembered_prompt(info) if choice is None else choice
    try:
        if choice == "none":
            return choose_prompts(info, no_prompt=True)
        if choice.startswith("name:"):
            return choose_prompts(info, prompt_name=choice[len("name:"):])
    except ModelError:
        pass
    return choose_prompts(info)


def _discover_with_fingerprints(folders, *, progress, should_stop):
    """Models on disk and their fingerprints (weights are hashed once per process)."""
    models = discover_models(folders)
    fingerprints = {}
    for done, info in enumerate(models):
        if should_stop():
            break
        progress(done, len(models), f"fingerprinting {info.name}")
        fingerprints[_key(info.path)] = fingerprint_folder(info.path, info.name).id
    return models, fingerprints


class ModelTableModel(QAbstractTableModel):
    """One row per discovered model; the loaded one is bold with a check mark."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.models: list[ModelInfo] = []
        self._keys: list[Path] = []
        self.loaded: Path | None = None
        self.fingerprints: dict[Path, str] = {}     # fingerprint ids by model folder

    def set_models(self, models) -> None:
        self.beginResetModel()
        self.models = list(models)
        self._keys = [_key(m.path) for m in self.models]
        self.endResetModel()

    def set_loaded(self, path, fingerprint_id: str | None) -> None:
        self.loaded = None if path is None else _key(path)
        if self.loaded is not None and fingerprint_id:
            self.fingerprints[self.loaded] = fingerprint_id
        if self.models:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.models) - 1, len(COLUMNS) - 1))

    def row_of(self, path) -> int | None:
        key = _key(path)
        return self._keys.index(key) if key in self._keys else None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.models)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        info, key, column = self.models[index.row()], self._keys[index.row()], index.column()
        loaded = key == self.loaded
        if role == Qt.ItemDataRole.DisplayRole:
            values = (info.name, info.source, info.dimension or "?", info.max_seq_length or "?",
                      f"{info.size_bytes / 1e6:,.1f}", self.fingerprints.get(key, "—"))
            return str(values[column])
        if role == Qt.ItemDataRole.FontRole and loaded:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.DecorationRole and column == 0 and loaded:
            return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_DialogApplyButton)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{info.path}" + ("\n(loaded)" if loaded else "")
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None


class ModelManager(QWidget):
    """Lists local models, picks a device, and asks the main window to load a model.

    Signals
    -------
    load_requested(ModelInfo, str)
        The user wants this model on this device ("auto", "cpu", "cuda", "mps").
    """

    load_requested = Signal(object, str)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self._state = state
        self._busy = False
        self._folders = remembered_folders()
        self._select_after: Path | None = None
        self._prompts_shown_for: ModelInfo | None = None

        self.table_model = ModelTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.table_model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(self.request_load)
        self.table.selectionModel().currentRowChanged.connect(self._update_details)

        self.device_combo = QComboBox()
        self.device_combo.setToolTip("Where the model runs; Auto picks CUDA, then MPS, then CPU")
        for value, text in DEVICES:
            self.device_combo.addItem(text, value)
        self._set_device_reasons({"cuda": "checking whether this device is available…",
                                  "mps": "checking whether this device is available…"})
        self.device_combo.setCurrentIndex(max(0, self.device_combo.findData(state.device)))
        self.precision_combo = QComboBox()
        self.precision_combo.setToolTip(
            "Number format the model computes in (embeddings are float32 either way). float32 "
            "gives the same numbers on every machine. Auto uses bfloat16 where the CPU (AMX or "
            "AVX512-BF16) or the GPU runs it natively and the model keeps its accuracy — faster, "
            "but scores differ by ~0.003 between machines. int8 (ONNX Runtime) uses less CPU time on a "
            "busy machine but is no faster than float32 on a quiet 2-core one; scores move by up to ~0.06. Applies to the next model loaded.")
        for value, text in PRECISIONS:
            self.precision_combo.addItem(text, value)
        remembered = QSettings("calibsim", "calibsim").value(PRECISION_KEY, DEFAULT_PRECISION, type=str)
        self.precision_combo.setCurrentIndex(max(0, self.precision_combo.findData(remembered)))
        self.precision_combo.currentIndexChanged.connect(self._save_precision)
        self.engine_combo = QComboBox()
        self.engine_combo.setToolTip(
            "What runs the model. ONNX Runtime (CPU) starts faster and needs less memory; it gives "
            "the same float32 numbers as PyTorch (within 1e-6) and runs int8. PyTorch runs GPUs "
            "and bfloat16. Auto picks ONNX Runtime on the CPU, PyTorch on a GPU or for bfloat16. "
            "Applies to the next model loaded.")
        for value, text in ENGINES:
            self.engine_combo.addItem(text, value)
        remembered = QSettings("calibsim", "calibsim").value(ENGINE_KEY, "auto", type=str)
        self.engine_combo.setCurrentIndex(max(0, self.engine_combo.findData(remembered)))
        self.engine_combo.currentIndexChanged.connect(
            lambda: QSettings("calibsim", "calibsim").setValue(ENGINE_KEY, self.engine()))
        self.prompt_combo = QComboBox()
        self.prompt_combo.setToolTip(
            "Text put before every scored text, anchor and background sentence (sentence-transformers' "
            "prompt), from the model folder's config_sentence_transformers.json; e5 models expect "
            "'query: '. A profile is only used with the prompt it was built with. Remembered per "
            "model; applies to the next model loaded.")
        self.prompt_combo.currentIndexChanged.connect(self._save_prompt)
        self.trust_graph_box = QCheckBox("Run a folder's own graph unverified")
        self.trust_graph_box.setToolTip(
            "Without PyTorch (as in the desktop app) calibsim cannot check an ONNX graph that came with "
            "a model folder against the folder's weights, and refuses it. Tick this only for a folder "
            "you trust: its graph then runs under its own fingerprint (never sharing cached vectors or "
            "profiles with the real model), and every result and report says it is unverified. "
            "Not remembered: it applies to the next model loaded in this session.")
        self.loaded_label = QLabel()
        self.loaded_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.add_button = self._button("Add folder…", "Add a local sentence-transformers model "
                                       "folder", "Ctrl+Shift+F", self._choose_folder)
        self.remove_button = self._button("Remove folder", "Forget the selected added folder "
                                          "(its files stay on disk)", "Delete", self.remove_selected)
        self.rescan_button = self._button("Rescan", "Look for models again (built-in, added "
                                          "folders, Hugging Face cache)", "F5", self.rescan)
        self.load_button = self._button("Load", "Load the selected model on the chosen device",
                                        "Ctrl+L", self.request_load)
        self.load_button.setDefault(True)

        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #b00020;")
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()

        buttons = QHBoxLayout()
        for widget in (self.add_button, self.remove_button, self.rescan_button):
            buttons.addWidget(widget)
        buttons.addSpacing(8)
        buttons.addWidget(self.trust_graph_box)
        buttons.addStretch(1)
        run_with = QHBoxLayout()             # a row of its own: fits a 1024-pixel window
        for label, combo in (("Device:", self.device_combo), ("Engine:", self.engine_combo),
                             ("Precision:", self.precision_combo), ("Prompt:", self.prompt_combo)):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)        # long choices are elided here, whole in the list
            run_with.addWidget(QLabel(label))
            run_with.addWidget(combo, 1 if combo in (self.device_combo, self.engine_combo) else 2)
            run_with.addSpacing(8)
        run_with.addWidget(self.load_button)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addLayout(run_with)
        layout.addWidget(self.message)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.loaded_label)
        details_box = QGroupBox("Selected model")
        QVBoxLayout(details_box).addWidget(self.details)
        layout.addWidget(details_box)

        self.discovery = TaskRunner("discover models", self)
        self.discovery.finished.connect(self._show_models)
        self.discovery.failed.connect(self._show_message)
        self.devices = TaskRunner("check devices", self)
        self.devices.finished.connect(self._set_device_reasons)
        self.devices.failed.connect(self._show_message)
        state.model_changed.connect(self._on_model_changed)

        self._devices_checked = False
        self._on_model_changed()
        self._update_details()
        self.rescan()

    def check_devices(self) -> None:
        """Ask torch which devices work (imports torch: done once a model is loaded, so the
        window comes up before torch is imported)."""
        self._devices_checked = True
        self.devices.start(lambda progress, should_stop: available_devices())

    # ------------------------------------------------------------------ public

    def selected_model(self) -> ModelInfo | None:
        row = self.table.currentIndex().row()
        return self.table_model.models[row] if 0 <= row < len(self.table_model.models) else None

    def device(self) -> str:
        return self.device_combo.currentData()

    def precision(self) -> str:
        """The chosen precision ("auto", "float32", "bfloat16" or "int8"), remembered across sessions."""
        return self.precision_combo.currentData()

    def engine(self) -> str:
        """The chosen engine ("auto", "onnx" or "torch"), remembered across sessions."""
        return self.engine_combo.currentData()

    def choose_engine(self, engine: str, precision: str) -> None:
        """Load the next model with this engine and precision (a reopened project's)."""
        for combo, value in ((self.engine_combo, engine), (self.precision_combo, precision)):
            if combo.findData(value) >= 0:
                combo.setCurrentIndex(combo.findData(value))

    def trust_folder_graph(self) -> bool:
        """Whether the next model may run its folder's own graph unchecked (this session only)."""
        return self.trust_graph_box.isChecked()

    def prompt_choice(self) -> str:
        """The prompt chosen for the selected model: "default", "none" or "name:<name>"."""
        return self.prompt_combo.currentData() or "default"

    def prompts_for(self, info_or_spec) -> PromptSettings | None:
        """The prompts to load `info_or_spec` with (None: the folder's own, for a typed spec)."""
        if not isinstance(info_or_spec, ModelInfo):
            return None
        selected = self.selected_model()
        if selected is not None and _key(selected.path) == _key(info_or_spec.path):
            return prompt_settings(info_or_spec, self.prompt_choice())
        return prompt_settings(info_or_spec)

    def set_busy(self, busy: bool) -> None:
        """Disable Load while the main window loads a model."""
        self._busy = busy
        self._update_details()

    def request_load(self) -> None:
        info = self.selected_model()
        if info is not None and not self._busy and refusal(info) is None:
            self.load_requested.emit(info, self.device())

    def rescan(self) -> None:
        self.discovery.start(_discover_with_fingerprints, list(self._folders))

    def add_folder(self, path) -> bool:
        """Remember a model folder and list it; a folder that is no model shows why."""
        try:
            info = inspect_model_folder(path)
        except ModelError as exc:
            self._show_message(str(exc))
            return False
        self._show_message("")
        key = _key(info.path)
        if key in {_key(f) for f in self._folders} or self.table_model.row_of(key) is not None:
            self._select(key)
            return True
        self._select_after = key
        self._folders.append(str(info.path))
        self._save_folders()
        self.rescan()
        return True

    def remove_selected(self) -> None:
        info = self.selected_model()
        if info is None or not self._is_added(info):
            return
        self._folders = [f for f in self._folders if _key(f) != _key(info.path)]
        self._save_folders()
        self.rescan()

    # ------------------------------------------------------------------ internals

    def _button(self, text, tip, shortcut, slot) -> QPushButton:
        button = QPushButton(text)
        sequence = QKeySequence(shortcut)
        button.setToolTip(f"{tip} ({sequence.toString(QKeySequence.SequenceFormat.NativeText)})")
        button.clicked.connect(slot)
        action = QAction(self)
        action.setShortcut(sequence)
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.triggered.connect(button.click)
        self.addAction(action)
        return button

    def _choose_folder(self) -> None:
        start = str(Path(self._folders[-1]).parent) if self._folders else str(Path.home())
        path = QFileDialog.getExistingDirectory(self, "Add a sentence-transformers model folder", start)
        if path:
            self.add_folder(path)

    def _save_folders(self) -> None:
        QSettings("calibsim", "calibsim").setValue(SETTINGS_KEY, self._folders)

    def _save_precision(self) -> None:
        QSettings("calibsim", "calibsim").setValue(PRECISION_KEY, self.precision())

    def _save_prompt(self) -> None:
        info = self.selected_model()
        if info is not None and self.prompt_combo.isEnabled() and self.prompt_combo.currentData():
            QSettings("calibsim", "calibsim").setValue(_prompt_setting_key(info), self.prompt_choice())

    def _fill_prompts(self, info: ModelInfo | None) -> None:
        """The selected folder's prompts in the Prompt box, the remembered choice selected."""
        self.prompt_combo.blockSignals(True)
        self.prompt_combo.clear()
        prompts = dict(info.prompts) if info is not None else {}
        if not prompts:
            self.prompt_combo.addItem("None (the folder declares no prompts)", "default")
        else:
            default = choose_prompts(info)
            self.prompt_combo.addItem(f"Folder default: {default.describe()}", "default")
            for name, text in prompts.items():
                self.prompt_combo.addItem(f"{name}: {text!r}", f"name:{name}")
            self.prompt_combo.addItem("No prompt", "none")
            self.prompt_combo.setCurrentIndex(max(0, self.prompt_combo.findData(remembered_prompt(info))))
        self.prompt_combo.setEnabled(bool(prompts))
        self.prompt_combo.blockSignals(False)

    def _is_added(self, info: ModelInfo) -> bool:
        return info.source == "local" and _key(info.path) in {_key(f) for f in self._folders}

    def _show_models(self, found) -> None:
        models, fingerprints = found
        previous = self.selected_model()
        self.table_model.fingerprints.update(fingerprints)
        self.table_model.set_models(models)
        listed = set(self.table_model._keys)
        missing = [f for f in self._folders if _key(f) not in listed]
        if missing:
            self._show_message("Added folders that are no longer usable model folders: "
                               + ", ".join(missing))
        state_info = self._state.model_info
        wanted = self._select_after or (previous and previous.path) or (state_info and state_info.path)
        self._select_after = None
        self._select(wanted)
        self._on_model_changed()

    def _select(self, path) -> None:
        row = self.table_model.row_of(path) if path is not None else None
        if row is None:
            row = 0 if self.table_model.models else -1
        self.table.selectRow(row)
        self._update_details()

    def _set_device_reasons(self, reasons: dict) -> None:
        items = self.device_combo.model()
        for i, (value, text) in enumerate(DEVICES):
            reason = reasons.get(value)
            items.item(i).setEnabled(reason is None)
            items.item(i).setToolTip(f"{text} cannot be used: {reason}" if reason else "")
        if not items.item(self.device_combo.currentIndex()).isEnabled():
            self.device_combo.setCurrentIndex(0)

    def _on_model_changed(self) -> None:
        if self._state.embedder is not None and not self._devices_checked:
            self.check_devices()
        embedder, info = self._state.embedder, self._state.model_info
        fingerprint = embedder.fingerprint.id if embedder is not None else None
        self.table_model.set_loaded(info.path if info is not None else None, fingerprint)
        if embedder is None:
            self.loaded_label.setText("No model loaded.")
            self.loaded_label.setToolTip("")
        else:
            name = info.name if info is not None else embedder.fingerprint.name
            precision = embedder_precision(embedder)
            prompts = getattr(embedder, "prompts", None)
            prompt = f", prompt <b>{html.escape(prompts.describe())}</b>" if prompts and prompts.symmetric else ""
            engine = ENGINE_NAMES.get(embedder_engine(embedder), embedder_engine(embedder))
            unverified = " — <b>its folder's graph, unverified</b>" if UNVERIFIED_NOTE in getattr(
                embedder, "precision_note", "") else ""
            self.loaded_label.setText(f"Loaded: <b>{html.escape(name)}</b> running on <b>{embedder.device}</b>"
                                      f" with {engine} in <b>{precision}</b>{prompt} — fingerprint {fingerprint}"
                                      f"{unverified}")
            self.loaded_label.setToolTip(getattr(embedder, "precision_note", precision))

    def _update_details(self, *_) -> None:
        info = self.selected_model()
        reason = refusal(info) if info is not None else None
        self.load_button.setEnabled(info is not None and not self._busy and reason is None)
        self.load_button.setText("Loading…" if self._busy else "Load")
        self.remove_button.setEnabled(info is not None and self._is_added(info))
        if info is not self._prompts_shown_for:
            self._prompts_shown_for = info
            self._fill_prompts(info)
        if info is None:
            self.details.setText("No model selected.")
            return
        safe = ("yes (safetensors)" if info.safe_weights
                else "<b>no</b> — pickle-only weights (*.bin); refused here, the command line "
                     "loads them with --allow-pickle if you trust the folder")
        remote = ("<b>yes</b> — refused: calibsim never runs code from a model folder"
                  if info.needs_remote_code else "no")
        self.details.setText(
            f"<b>{html.escape(info.name)}</b> ({info.source})<br>Path: {html.escape(str(info.path))}"
            f"<br>Safe weights: {safe}"
            f"<br>Needs remote code: {remote}"
            f"<br>Prompts: {html.escape(', '.join(f'{k}={v!r}' for k, v in info.prompts.items()) or 'none', quote=False)}"
            + (f" (default: {html.escape(info.default_prompt_name)})" if info.default_prompt_name else ""))
        self.load_button.setToolTip(f"Cannot load: {reason}." if reason else
                                    "Load the selected model on the chosen device (Ctrl+L)")

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
