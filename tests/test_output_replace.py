"""A backfill replaces a batch directory: in one swap on a local disk, by renames elsewhere,
and whatever happens never leaves the old batch under a name readers' globs would match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark.dstream import files


class Elsewhere:
    """The local Hadoop FileSystem, answering as one whose `fs.defaultFS` is HDFS."""

    def __init__(self, sc: SparkContext, fs: Any, failing: int | None = None) -> None:
        self._jvm = sc._jvm
        self._fs = fs
        self._failing = failing
        self.renames = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)

    def getUri(self) -> Any:  # Hadoop's name
        return self._jvm.java.net.URI("hdfs://namenode:8020")

    def getWorkingDirectory(self) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path("hdfs://namenode:8020/user/spark")

    def rename(self, source: Any, target: Any) -> bool:
        self.renames += 1
        return self.renames != self._failing and bool(self._fs.rename(source, target))


def test_a_path_without_scheme_is_local_only_where_the_default_file_system_is(
    sc: SparkContext, tmp_path: Path
) -> None:
    path, fs = files._hadoop(sc, str(tmp_path / "daily-1000"))
    assert path.toUri().getScheme() is None  # as batch_path makes it
    assert files._local_path(fs, path) == str(tmp_path / "daily-1000")
    assert files._local_path(Elsewhere(sc, fs), path) is None  # fs.defaultFS=hdfs://...
    on_hdfs = sc._jvm.org.apache.hadoop.fs.Path("hdfs://namenode:8020/out/daily-1000")
    assert files._local_path(fs, on_hdfs) is None


def batches(root: Path) -> tuple[Path, Path]:
    """`daily-1000` (the old batch) and the new one written beside it."""
    final, new = root / "daily-1000", root / "_temporary-daily-1000-new"
    for directory, text in ((final, "old"), (new, "new")):
        directory.mkdir()
        (directory / "part-00000").write_text(text)
    return final, new


def aside(sc: SparkContext, path: Any) -> Any:
    return files._hidden_beside(sc, path)


def test_on_a_file_system_that_is_not_local_the_batch_is_replaced_by_renames(
    sc: SparkContext, tmp_path: Path
) -> None:
    final, new = batches(tmp_path)
    path, fs = files._hadoop(sc, str(final))
    elsewhere = Elsewhere(sc, fs)
    files._replace(elsewhere, files._hadoop(sc, str(new))[0], path, aside(sc, path))
    assert elsewhere.renames == 2  # not the local swap
    assert (final / "part-00000").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daily-1000"]


def test_a_failed_replace_by_renames_puts_the_old_batch_back(
    sc: SparkContext, tmp_path: Path
) -> None:
    final, new = batches(tmp_path)
    path, fs = files._hadoop(sc, str(final))
    elsewhere = Elsewhere(sc, fs, failing=2)  # the new batch cannot be renamed into place
    with pytest.raises(files.OutputWriteError, match="the old batch is back in place"):
        files._replace(elsewhere, files._hadoop(sc, str(new))[0], path, aside(sc, path))
    assert (final / "part-00000").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_temporary-daily-1000-new", "daily-1000"]


def test_without_renameat2_the_swap_hides_the_old_batch_and_undoes_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "_renameat2", lambda: None)  # not Linux, or glibc before 2.28
    final, new = batches(tmp_path)
    moved: list[str] = []
    real = files.os.rename

    def watched(source: str, target: str) -> None:
        moved.append(Path(target).name)
        real(source, target)

    monkeypatch.setattr(files.os, "rename", watched)
    files.exchange(str(final), str(new))
    assert (final / "part-00000").read_text() == "new"
    assert (new / "part-00000").read_text() == "old"
    hidden = moved[0]  # where the old batch waited: recovery would remove it, globs miss it
    assert hidden.startswith("_temporary-daily-1000-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_temporary-daily-1000-new", "daily-1000"]

    def failing(source: str, target: str) -> None:
        if source == str(new):
            raise PermissionError(13, "Permission denied")
        real(source, target)

    monkeypatch.setattr(files.os, "rename", failing)
    with pytest.raises(PermissionError):
        files.exchange(str(final), str(new))
    assert (final / "part-00000").read_text() == "new"  # as before the failed swap
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_temporary-daily-1000-new", "daily-1000"]


def test_recovery_removes_an_old_batch_a_crash_left_aside(sc: SparkContext, tmp_path: Path) -> None:
    final, _ = batches(tmp_path)
    hidden = files._hidden_beside(sc, files._hadoop(sc, str(final))[0])
    Path(hidden.toUri().getPath()).mkdir()
    removed = files.remove_interrupted_writes(sc, str(tmp_path / "daily"))
    assert [Path(p).name for p in removed] == [hidden.getName()]
