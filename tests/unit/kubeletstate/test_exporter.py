"""KubeletStateFiles: a file is rendered when its manager's generation moves, written only when its
bytes change, atomically (temporary file beside it, renamed), and tried again after a failure."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from nodeagent.kubeletstate.exporter import KubeletStateFiles, StateFile, write_atomic


class Source:
    def __init__(self, text: str | None) -> None:
        self.gen, self.text, self.renders = 0, text, 0

    def generation(self) -> int:
        return self.gen

    def render(self) -> bytes | None:
        self.renders += 1
        return None if self.text is None else self.text.encode()


def test_written_on_generation_change_only_when_the_bytes_change(tmp_path: Path) -> None:
    src = Source("one")
    path = tmp_path / "cpu_manager_state"
    files = KubeletStateFiles([StateFile(path, src.generation, src.render)])
    assert files.due() and files.sync_now() == 1 and path.read_text() == "one"
    assert not files.due() and files.sync_now() == 0 and src.renders == 1
    src.gen += 1  # a change that leaves the file's content as it is: rendered, not written
    assert files.sync_now() == 0 and src.renders == 2 and not files.due()
    src.gen, src.text = src.gen + 1, "two"
    assert files.sync_now() == 1 and path.read_text() == "two"


def test_none_means_not_yet(tmp_path: Path) -> None:
    src = Source(None)
    path = tmp_path / "device-plugins" / "kubelet_internal_checkpoint"
    files = KubeletStateFiles([StateFile(path, src.generation, src.render)])
    assert files.sync_now() == 0 and not path.exists() and not files.due()
    src.gen, src.text = 1, "{}"
    assert files.sync_now() == 1 and path.read_text() == "{}"


def test_a_failed_write_is_tried_again(tmp_path: Path) -> None:
    src = Source("x")
    path = tmp_path / "f"
    failures = [OSError("disk full")]

    def write(p: Path, data: bytes) -> None:
        if failures:
            raise failures.pop()
        write_atomic(p, data)

    files = KubeletStateFiles([StateFile(path, src.generation, src.render)], write=write)
    assert files.sync_now() == 0 and not path.exists() and files.due()
    assert files.sync_now() == 1 and path.read_text() == "x"


def test_write_atomic_leaves_no_temporary_file_and_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_text("old")
    write_atomic(path, b"new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["memory_manager_state"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_sync_writes_in_a_thread_and_tick_starts_one_pass(tmp_path: Path) -> None:
    src = Source("a")
    path = tmp_path / "dra_manager_state"
    files = KubeletStateFiles([StateFile(path, src.generation, src.render)])
    files.tick()
    files.tick()  # one pass at a time
    for _ in range(100):
        if path.exists():
            break
        await asyncio.sleep(0.01)
    assert path.read_text() == "a" and files.writes == 1
    await files.close()


@pytest.mark.parametrize("name", ["cpu_manager_state", "kubelet_internal_checkpoint"])
def test_paths_are_kept(tmp_path: Path, name: str) -> None:
    src = Source("a")
    files = KubeletStateFiles([StateFile(tmp_path / name, src.generation, src.render)])
    assert files.paths == (tmp_path / name,)
