"""The daemon's locks: root dir, state dir and admin socket, each refused with the holder's pid."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeagent.errors import StartupError
from nodeagent.util.lock import DaemonLocks, owned_places


def _locks(base: Path, root: str, state: str, admin: str) -> DaemonLocks:
    return DaemonLocks(owned_places(base / root, base / state, base / admin))


@pytest.mark.parametrize(
    ("second", "what"),
    [
        (("root", "state2", "a2.sock"), "root dir"),
        (("root2", "state", "a2.sock"), "state dir"),
        (("root2", "state2", "a.sock"), "admin socket"),
    ],
)
def test_second_owner_of_any_place_is_refused(tmp_path: Path, second: tuple[str, str, str], what: str) -> None:
    first = _locks(tmp_path, "root", "state", "a.sock")
    first.acquire()
    try:
        with pytest.raises(StartupError) as err:
            _locks(tmp_path, *second).acquire()
        assert f"{what} {tmp_path}" in str(err.value)
        assert f"is locked by another running nodeagent (pid {os.getpid()}" in str(err.value)
    finally:
        first.release()


def test_refusal_releases_what_was_taken(tmp_path: Path) -> None:
    first = _locks(tmp_path, "root", "state", "a.sock")
    first.acquire()
    with pytest.raises(StartupError):
        _locks(tmp_path, "root2", "state", "a2.sock").acquire()  # root2 taken, then state refused
    first.release()
    third = _locks(tmp_path, "root2", "state3", "a3.sock")
    third.acquire()  # root2 was released by the refused one
    third.release()


def test_state_dir_equal_to_root_dir_is_locked_once(tmp_path: Path) -> None:
    locks = _locks(tmp_path, "same", "same", "a.sock")
    locks.acquire()  # would refuse itself if the one file were flocked twice
    locks.release()


def test_released_locks_can_be_taken_again(tmp_path: Path) -> None:
    first = _locks(tmp_path, "root", "state", "a.sock")
    first.acquire()
    first.release()
    again = _locks(tmp_path, "root", "state", "a.sock")
    again.acquire()
    again.release()


def test_lock_file_symlink_is_refused_and_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "nodeagent.lock").symlink_to(target)
    with pytest.raises(StartupError, match="it is a symlink"):
        _locks(tmp_path, "root", "state", "a.sock").acquire()
    assert target.read_text() == "keep me"


def test_folders_the_locks_create_have_the_modes_hardening_keeps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A first start creates stateDir 0700 and rootDir 0750 (the lock files are the first things in
    them), so hardening has nothing to tighten: before, stateDir came out 0750 and every first
    start (`make run` included) warned `stateDir mode tightened from 0750 to 0700`."""
    import stat

    from nodeagent import hardening

    old = os.umask(0o022)
    try:
        locks = _locks(tmp_path, "root", "state", "a.sock")
        locks.acquire()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == hardening.STATE_DIR_MODE
        assert stat.S_IMODE((tmp_path / "root").stat().st_mode) == hardening.ROOT_DIR_MODE
        with caplog.at_level("WARNING", logger="nodeagent.hardening"):
            hardening.tighten_dir(tmp_path / "state", hardening.STATE_DIR_MODE, "stateDir")
            hardening.tighten_dir(tmp_path / "root", hardening.ROOT_DIR_MODE, "rootDir")
        assert caplog.records == []
    finally:
        locks.release()
