"""Model files from the Hugging Face cache, as `--offline` finds them (the hub itself is out of
reach here): a cache laid out as huggingface_hub writes it, read by the real library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wyoming_multitts.catalog import FileRef
from wyoming_multitts.errors import ModelFileError
from wyoming_multitts.hub import Hub

REPO = "example/voices"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FILES = ("config.json", "speaker_embeddings/v2/en_speaker_0_semantic_prompt.npy")


def cached_snapshot(cache: Path, names: tuple[str, ...]) -> Path:
    """`cache/models--example--voices` with `refs/main` → COMMIT and the files of `names`."""
    repo_dir = cache / "models--example--voices"
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(COMMIT)
    snapshot = repo_dir / "snapshots" / COMMIT
    for name in names:
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).write_text(name)
    return snapshot


def test_offline_file_and_folder_come_from_the_cache(tmp_path: Path) -> None:
    snapshot = cached_snapshot(tmp_path, FILES)
    hub = Hub(cache_dir=tmp_path, offline=True)
    assert hub.fetch_file(FileRef(repo=REPO, file=FILES[1])) == snapshot / FILES[1]
    assert hub.fetch_folder(FileRef(repo=REPO), FILES) == snapshot


def test_a_file_missing_from_the_cached_folder_is_named(tmp_path: Path) -> None:
    cached_snapshot(tmp_path, FILES[:1])
    hub = Hub(cache_dir=tmp_path, offline=True)
    with pytest.raises(ModelFileError, match=r"^folder .* lacks speaker_embeddings/v2/"):
        hub.fetch_folder(FileRef(repo=REPO), FILES)


def test_an_uncached_folder_offline_says_what_to_do(tmp_path: Path) -> None:
    hub = Hub(cache_dir=tmp_path, offline=True)
    with pytest.raises(ModelFileError, match=r"cannot get example/voices .*--offline is set"):
        hub.fetch_folder(FileRef(repo=REPO), FILES)


def test_a_local_folder_must_hold_every_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    hub = Hub(offline=True)
    with pytest.raises(ModelFileError, match=r"lacks speaker_embeddings.*fix 'path:'"):
        hub.fetch_folder(FileRef(path=tmp_path), FILES)
    assert hub.fetch_folder(FileRef(path=tmp_path), FILES[:1]) == tmp_path


@pytest.mark.parametrize("present", ["vocab.txt", "tokenizer.json"])
def test_a_folder_file_may_be_either_of_two(tmp_path: Path, present: str) -> None:
    """Bark's tokenizer: a repo ships `vocab.txt`, `tokenizer.json` or both."""
    names = ("config.json", "vocab.txt|tokenizer.json")
    snapshot = cached_snapshot(tmp_path, ("config.json", present))
    hub = Hub(cache_dir=tmp_path, offline=True)
    assert hub.fetch_folder(FileRef(repo=REPO), names) == snapshot
    (snapshot / present).unlink()
    with pytest.raises(ModelFileError, match=r"lacks vocab\.txt or tokenizer\.json; check"):
        hub.fetch_folder(FileRef(repo=REPO), names)


def test_partial_downloads_no_process_writes_are_removed(tmp_path: Path) -> None:
    """A worker killed mid-download leaves `blobs/<etag>.<id>.incomplete`; one that another
    process is writing (it holds the blob's lock, as huggingface_hub does) stays."""
    blobs = tmp_path / "models--example--voices" / "blobs"
    blobs.mkdir(parents=True)
    dead = blobs / "aaaa.1234abcd.incomplete"
    dead.write_bytes(b"x" * 1000)
    live = blobs / "bbbb.5678abcd.incomplete"
    live.write_bytes(b"y" * 10)
    lock = tmp_path / ".locks" / "models--example--voices" / "bbbb.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        assert Hub(cache_dir=tmp_path).remove_stale_downloads() == 1000
        assert not dead.exists() and live.exists()
    finally:
        holder.kill()
        holder.wait()
    assert Hub(cache_dir=tmp_path).remove_stale_downloads() == 10  # its writer is gone now


HOLD_LOCK = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(60)
"""
