import json

import pytest
from PySide6.QtCore import Qt

from calibsim_gui.core.embedding.model_folders import BUILTIN_MODEL_NAME, discover_models, fingerprint_folder
from calibsim_gui.qt.editors import model_manager as mm
from calibsim_gui.qt.editors.model_manager import COLUMNS, ModelManager
from calibsim_gui.qt.session.state import AppState
from tests.fakes import FakeEmbedder


@pytest.fixture
def devices(monkeypatch):
    """Device check without a GPU (deterministic, no torch import)."""
    reasons = {"cpu": None, "cuda": "no CUDA device found (no GPU, or its driver is missing)",
               "mps": "no MPS device (needs macOS 12.3 or later on Apple silicon)"}
    monkeypatch.setattr(mm, "available_devices", lambda: reasons)
    return reasons


def make_manager(qtbot, state=None):
    """A ModelManager whose model discovery and device check have both answered."""
    manager = ModelManager(state or AppState())
    qtbot.addWidget(manager)
    assert not manager.devices.running or manager._state.embedder is not None   # torch waits for a model
    # Results reach the widget through the event loop, so waiting after construction is safe.
    with qtbot.waitSignals([manager.discovery.finished, manager.devices.finished], timeout=120_000):
        if not manager.devices.running:
            manager.check_devices()
    return manager


def wait_listed(qtbot, manager, action):
    with qtbot.waitSignal(manager.discovery.finished, timeout=120_000):
        action()


def model_folder(path, *, weights="model.safetensors", remote_code=False):
    path.mkdir(parents=True)
    (path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    config = {"hidden_size": 32, **({"auto_map": {"AutoModel": "x.Y"}} if remote_code else {})}
    (path / "config.json").write_text(json.dumps(config))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    (path / weights).write_bytes(b"\0" * 1000)
    return path


def cell(manager, row, column):
    return manager.table_model.index(row, COLUMNS.index(column)).data()


def test_lists_the_builtin_model_and_load_emits_it_with_the_device(qtbot, devices):
    manager = make_manager(qtbot)
    builtin = discover_models()[0]
    assert cell(manager, 0, "Name") == BUILTIN_MODEL_NAME
    assert cell(manager, 0, "Source") == "built-in"
    assert cell(manager, 0, "Dimension") == "384"
    assert cell(manager, 0, "Fingerprint") == fingerprint_folder(builtin.path, builtin.name).id   # before loading
    assert manager.selected_model() == builtin
    assert "Safe weights: yes" in manager.details.text()

    manager.device_combo.setCurrentIndex(manager.device_combo.findData("cpu"))
    with qtbot.waitSignal(manager.load_requested, timeout=120_000) as blocker:
        manager.load_button.click()
    assert blocker.args == [builtin, "cpu"]

    manager.set_busy(True)
    assert not manager.load_button.isEnabled()
    with qtbot.assertNotEmitted(manager.load_requested):
        manager.request_load()
    manager.set_busy(False)
    assert manager.load_button.isEnabled()


def test_double_click_on_a_row_requests_loading(qtbot, devices):
    manager = make_manager(qtbot)
    index = manager.table_model.index(0, 0)
    with qtbot.waitSignal(manager.load_requested, timeout=120_000) as blocker:
        manager.table.doubleClicked.emit(index)
    assert blocker.args[0].name == BUILTIN_MODEL_NAME and blocker.args[1] == "auto"


def test_a_folder_that_is_not_a_model_shows_why_and_keeps_the_list(qtbot, devices, tmp_path):
    manager = make_manager(qtbot)
    before = list(manager.table_model.models)
    (tmp_path / "notes.txt").write_text("not a model")
    assert not manager.add_folder(tmp_path)
    assert manager.message.isVisibleTo(manager)
    assert "not a sentence-transformers model folder" in manager.message.text()
    assert manager.table_model.models == before
    assert mm.remembered_folders() == []


def test_added_folder_is_listed_remembered_and_removable(qtbot, devices, tmp_path, monkeypatch):
    folder = model_folder(tmp_path / "my-model")
    manager = make_manager(qtbot)
    monkeypatch.setattr(mm.QFileDialog, "getExistingDirectory", lambda *a: str(folder))
    wait_listed(qtbot, manager, manager.add_button.click)
    assert not manager.message.isVisibleTo(manager)
    assert manager.selected_model().path == folder
    assert cell(manager, manager.table.currentIndex().row(), "Source") == "local"
    assert manager.remove_button.isEnabled()

    again = make_manager(qtbot)                      # next start lists it again
    assert folder in [m.path for m in again.table_model.models]
    assert not again.remove_button.isEnabled()       # the built-in model is selected
    again.table.selectRow(again.table_model.row_of(folder))
    wait_listed(qtbot, again, again.remove_button.click)
    assert folder not in [m.path for m in again.table_model.models]
    assert mm.remembered_folders() == []


def test_unsafe_folders_are_described_and_cannot_be_loaded(qtbot, devices, tmp_path):
    pickled = model_folder(tmp_path / "pickled", weights="pytorch_model.bin")
    remote = model_folder(tmp_path / "remote", remote_code=True)
    manager = make_manager(qtbot)
    wait_listed(qtbot, manager, lambda: manager.add_folder(pickled))
    assert "--allow-pickle" in manager.details.text()
    assert not manager.load_button.isEnabled()
    wait_listed(qtbot, manager, lambda: manager.add_folder(remote))
    assert "Needs remote code: <b>yes</b> — refused" in manager.details.text()
    with qtbot.assertNotEmitted(manager.load_requested):
        manager.request_load()


def test_unavailable_devices_are_disabled_with_the_reason(qtbot, devices):
    manager = make_manager(qtbot)
    items = manager.device_combo.model()
    row = {value: i for i, (value, _) in enumerate(mm.DEVICES)}
    assert items.item(row["auto"]).isEnabled() and items.item(row["cpu"]).isEnabled()
    assert not items.item(row["cuda"]).isEnabled()
    assert devices["cuda"] in items.item(row["cuda"]).toolTip()
    assert not items.item(row["mps"]).isEnabled()


def test_devices_are_checked_for_real_in_a_worker(qtbot):
    from calibsim_gui.core.embedding.devices import available_devices

    manager = make_manager(qtbot)
    items = manager.device_combo.model()
    for i, (value, _) in enumerate(mm.DEVICES):
        reason = available_devices()[value] if value != "auto" else None
        assert items.item(i).isEnabled() == (reason is None)
        assert (reason or "") in items.item(i).toolTip()


def test_loaded_model_is_marked_with_its_fingerprint_and_device(qtbot, devices):
    state = AppState()
    manager = make_manager(qtbot, state)
    assert "No model loaded" in manager.loaded_label.text()
    embedder = FakeEmbedder()
    state.set_model(embedder, manager.table_model.models[0])
    assert cell(manager, 0, "Fingerprint") == embedder.fingerprint.id
    assert manager.table_model.index(0, 0).data(Qt.ItemDataRole.FontRole).bold()
    assert "running on <b>cpu</b>" in manager.loaded_label.text()


def test_keyboard_shortcuts_load_and_rescan(qtbot, devices):
    manager = make_manager(qtbot)
    manager.show()
    with qtbot.waitActive(manager, timeout=120_000):
        manager.activateWindow()
    manager.table.setFocus()
    with qtbot.waitSignal(manager.load_requested, timeout=120_000):
        qtbot.keyClick(manager.table, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(manager.discovery.finished, timeout=120_000):
        qtbot.keyClick(manager.table, Qt.Key.Key_F5)


def test_precision_choice_is_offered_and_remembered_for_the_next_start(qtbot, devices):
    manager = make_manager(qtbot)
    assert manager.precision() == "float32"                   # reproducible unless the user opts in
    assert [manager.precision_combo.itemData(i) for i in range(manager.precision_combo.count())] == \
        ["float32", "auto", "bfloat16", "int8"]
    assert "same numbers on every machine" in manager.precision_combo.toolTip()
    manager.precision_combo.setCurrentIndex(manager.precision_combo.findData("auto"))
    assert make_manager(qtbot).precision() == "auto"


def test_engine_choice_is_offered_remembered_and_shown(qtbot, devices):
    manager = make_manager(qtbot)
    assert manager.engine() == "auto"
    assert [manager.engine_combo.itemData(i) for i in range(manager.engine_combo.count())] == \
        ["auto", "onnx", "torch"]
    manager.engine_combo.setCurrentIndex(manager.engine_combo.findData("torch"))
    again = make_manager(qtbot)
    assert again.engine() == "torch"
    state = AppState()
    shown = make_manager(qtbot, state)
    embedder = FakeEmbedder()
    embedder.engine = "onnx"
    state.set_model(embedder, shown.table_model.models[0])
    assert "with ONNX Runtime in <b>float32</b>" in shown.loaded_label.text()


def test_loaded_model_shows_its_precision_and_why(qtbot, devices):
    state = AppState()
    manager = make_manager(qtbot, state)
    embedder = FakeEmbedder()
    embedder.precision, embedder.precision_note = "bfloat16", "bfloat16 (auto: native support, verified)"
    state.set_model(embedder, manager.table_model.models[0])
    assert "in <b>bfloat16</b>" in manager.loaded_label.text()
    assert manager.loaded_label.toolTip() == embedder.precision_note


def test_prompt_box_shows_the_folders_prompts_and_remembers_the_choice(qtbot, devices, tmp_path, monkeypatch):
    folder = model_folder(tmp_path / "e5-like")
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": "query"}))
    manager = make_manager(qtbot)
    assert not manager.prompt_combo.isEnabled()                  # the built-in model has no prompts
    assert manager.prompts_for(manager.selected_model()).symmetric == ""
    monkeypatch.setattr(mm.QFileDialog, "getExistingDirectory", lambda *a: str(folder))
    wait_listed(qtbot, manager, manager.add_button.click)
    info = manager.selected_model()
    assert manager.prompt_combo.isEnabled()
    assert [manager.prompt_combo.itemData(i) for i in range(manager.prompt_combo.count())] == \
        ["default", "name:query", "name:document", "none"]
    assert "'query: '" in manager.prompt_combo.currentText()
    assert manager.prompts_for(info).symmetric == "query: "
    assert "Prompts: query='query: '" in manager.details.text()
    manager.prompt_combo.setCurrentIndex(manager.prompt_combo.findData("none"))
    assert manager.prompts_for(info).symmetric == ""
    again = make_manager(qtbot)                                  # remembered for this model
    again.table.selectRow(again.table_model.row_of(folder))
    assert again.prompt_choice() == "none"
    assert mm.prompt_settings(info).symmetric == ""
