import os
import stat

import pytest

from calibsim_gui.core.errors import WriteError
from calibsim_gui.core.io.atomic import atomic_path, write_text_atomic


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.csv"]


def test_written_files_get_the_usual_permissions(tmp_path):
    target = tmp_path / "p.json"
    write_text_atomic(target, "{}")
    assert target.read_text() == "{}"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_a_folder_with_the_files_name_is_a_clear_error_and_stays_where_it_was(tmp_path):
    folder = tmp_path / "report.html"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(WriteError) as failed:
        write_text_atomic(folder, "<html>")
    assert str(failed.value).startswith(f"{folder}: could not write the file (Is a directory)")
    assert "Fix: a folder has that name; choose another output name" in str(failed.value)
    assert os.listdir(tmp_path) == ["report.html"] and (folder / "notes.txt").read_text() == "mine"
