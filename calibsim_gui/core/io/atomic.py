"""Atomic file writes: write to temporaries beside the targets, then rename them into place.

Every writer in calibsim goes through `atomic_paths`, so a write the system refuses (disk full,
file too large, no permission, read-only disk, ...) always ends the same way: a `WriteError`
naming the file, no temporary left behind, and each previous file exactly as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from pathlib import Path

from calibsim_gui.core.errors import WriteError

_FIXES = {
    errno.ENOSPC: "free some disk space, or write to another drive",
    errno.EDQUOT: "free some space in your disk quota, or write to another drive",
    errno.EFBIG: "the file is too large for this drive or for the limits this program runs "
                 "under; write to another drive, or split the input",
    errno.EACCES: "choose a folder you may write to, or change the folder's permissions",
    errno.EPERM: "choose a folder you may write to, or change the folder's permissions",
    errno.EROFS: "the drive is read-only; write to another drive",
    errno.ENOENT: "check that the folder exists",
    errno.ENOTDIR: "check that the folder exists",
    errno.EISDIR: "a folder has that name; choose another output name",
    errno.ENAMETOOLONG: "choose a shorter output name",
}


def write_failed(target, exc: OSError) -> WriteError:
    """The one error every writer raises when the system refuses to write `target`."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    error = WriteError(f"could not write the file ({reason}). Nothing was written; any previous "
                       "file of that name is unchanged.", path=target,
                       fix=_FIXES.get(exc.errno, "check the folder exists and is writable, and "
                                                 "that there is free space"))
    error.errno = exc.errno
    return error


@contextlib.contextmanager
def atomic_paths(*targets: str | os.PathLike):
    """Yield one temporary path per target; when the block succeeds, rename each onto its target.

    The files are replaced together: if the block or any rename fails, every temporary is
    removed and every target is restored as it was (also when it did not exist). An `OSError`
    becomes a `WriteError` naming the target it was about (else the first); other exceptions
    pass unchanged.
    """
    targets = [Path(t) for t in targets]
    temporaries: list[Path] = []
    replaced: list[tuple[Path, Path | None]] = []    # (target, backup of its previous content)
    try:
        for target in targets:
            temporaries.append(_temporary(target))
        yield temporaries
        for tmp in temporaries:
            _flush_to_disk(tmp)
        for tmp, target in zip(temporaries, targets):
            replaced.append((target, _backup(target)))
            os.replace(tmp, target)
    except BaseException as exc:
        _restore(replaced)
        for tmp in temporaries:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise write_failed(_target_of(exc, targets, temporaries), exc) from exc
        raise
    for _, backup in replaced:
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike):
    """Yield a temporary path next to `target`; rename it onto `target` if the block succeeds."""
    with atomic_paths(target) as (tmp,):
        yield tmp


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `target` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _target_of(exc: OSError, targets: list[Path], temporaries: list[Path]) -> Path:
    """The target whose file (or temporary) `exc` names; the first target when it names none."""
    named = exc.filename and Path(exc.filename)
    for target, tmp in zip(targets, temporaries + [None] * len(targets)):
        if named in (target, tmp):
            return target
    return targets[0]


def _temporary(target: Path) -> Path:
    if target.is_dir() and not target.is_symlink():   # else `_backup` would move the folder aside
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())      # mkstemp makes 0600; give the usual permissions
    return Path(tmp)


def _flush_to_disk(path: Path) -> None:
    """fsync `path`: a disk that fills up while data waits in memory fails here, not later."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _backup(target: Path) -> Path | None:
    """A second name for `target`'s current file (a hard link: needs no space), or None if absent."""
    if not target.exists():
        return None
    backup = target.with_name(f".{target.name}.{secrets.token_hex(6)}.old")
    try:
        os.link(target, backup, follow_symlinks=False)
    except (OSError, NotImplementedError):    # no hard links here (e.g. FAT): move it aside instead
        os.replace(target, backup)
    return backup


def _restore(replaced: list[tuple[Path, Path | None]]) -> None:
    """Put back what `atomic_paths` had replaced (best effort: runs while handling a failure)."""
    for target, backup in reversed(replaced):
        with contextlib.suppress(OSError):
            if backup is None:
                os.unlink(target)
            elif target.exists() and os.path.samefile(backup, target):   # never replaced
                os.unlink(backup)
            else:
                os.replace(backup, target)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
