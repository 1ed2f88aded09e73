"""Model files from Hugging Face (cache, offline mode) or local paths, with progress in the log."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from tqdm.auto import tqdm

from .catalog import FileRef
from .errors import ModelFileError, NotEnoughDiskError

_LOGGER = logging.getLogger(__name__)

PROGRESS_STEP = 0.1
"""Log download progress every 10 % of a file."""
MISSING_SHOWN = 5
"""Missing files an error names before saying how many more."""
HUB_FAILURES = {
    "RepositoryNotFoundError": "the hub has no such repo, or it is private: check the repo id "
    "in the catalog",
    "GatedRepoError": "the repo is gated: accept its terms on huggingface.co and log in with "
    "huggingface-cli login",
    "RevisionNotFoundError": "the repo has no such revision: check 'revision:' in the catalog",
    "EntryNotFoundError": "the repo has no such file: check the file name in the catalog",
}
"""What to do about a hub failure, by huggingface_hub's exception class; the client gets this
and the class name, the log the whole text (a URL, a server's reply)."""
ALTERNATIVES = "|"
"""Separates the names of files that stand in for each other in a folder's list
(`vocab.txt|tokenizer.json`): each is fetched where the repo has it, one of them must be there."""


class _LoggedProgress(tqdm):
    """A tqdm that writes nothing to the terminal but logs every `PROGRESS_STEP` of a download."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["file"] = io.StringIO()
        kwargs.pop("disable", None)
        super().__init__(*args, **kwargs)
        self._next_report = PROGRESS_STEP

    def update(self, n: float | None = 1) -> bool | None:
        result = super().update(n)
        if self.total and self.n / self.total >= self._next_report:
            _LOGGER.info(
                "Downloading %s: %.0f%% of %.1f MB",
                self.desc,
                100 * self.n / self.total,
                self.total / 1e6,
            )
            while self._next_report <= self.n / self.total:
                self._next_report += PROGRESS_STEP
        return result


@dataclass(frozen=True)
class FileBytes:
    """The size of a model's files: those still to download, and all of them."""

    missing: int
    total: int


@dataclass(frozen=True)
class Hub:
    """Fetches model files into the Hugging Face cache (or finds them on disk)."""

    cache_dir: Path | None = None
    """Where downloads go (None: the Hugging Face default, `~/.cache/huggingface/hub`)."""
    offline: bool = False
    """Use only files already in the cache; never touch the network."""
    offline_because: str = "--offline is set"
    """Why, for the error when a file is not in the cache."""
    min_free_bytes: int = 0
    """Free space the cache's disk keeps (`--min-free-disk`): a download that would leave
    less is refused before it starts."""
    max_disk_bytes: int = 0
    """Most the model cache may hold, downloads and conversions together (`--max-model-disk`;
    0: no limit): a download that would take it over is refused before it starts."""

    def sizes(self, ref: FileRef, names: tuple[str, ...] | None) -> FileBytes:
        """The bytes of the files of `ref` (`names` of a folder, else its `file`): those not in
        the cache yet, and all of them. Sizes of missing files come from the hub, in one
        listing, before anything is downloaded; offline, a missing file counts 0 (its fetch
        fails with the reason)."""
        if ref.path is not None:
            files = [ref.path] if names is None else [ref.path / n for n in _file_names(names)]
            return FileBytes(0, sum(f.stat().st_size for f in files if f.is_file()))
        from huggingface_hub import HfApi, try_to_load_from_cache

        wanted = [ref.file or ""] if names is None else _file_names(names)
        cached_bytes, missing = 0, []
        for name in wanted:
            cached = try_to_load_from_cache(
                ref.repo or "", name, cache_dir=self.cache_dir, revision=ref.revision
            )
            if isinstance(cached, str):
                cached_bytes += Path(cached).stat().st_size
            else:
                missing.append(name)
        if not missing or self.offline:
            return FileBytes(0, cached_bytes)
        with self._hub_errors(f"{ref.repo} (its file sizes)"):
            listing = HfApi().list_repo_tree(ref.repo or "", revision=ref.revision, recursive=True)
            listed = {entry.path: getattr(entry, "size", 0) for entry in listing}
        missing_bytes = sum(listed.get(name, 0) for name in missing)
        return FileBytes(missing_bytes, cached_bytes + missing_bytes)

    def check_room(self, needed: int, what: str) -> None:
        """`NotEnoughDiskError` when writing `needed` more bytes into the cache (`what`'s
        downloads and conversions) would leave less than `min_free_bytes` free on its disk or
        take the cache over `max_disk_bytes` (huggingface_hub itself only warns when the disk
        is short)."""
        if needed <= 0:
            return
        cache = self._cache()
        free = shutil.disk_usage(_existing(cache)).free
        if self.min_free_bytes > 0 and free - needed < self.min_free_bytes:
            raise NotEnoughDiskError(
                f"{what} needs {needed / 1e9:.1f} GB more in the model cache, whose disk has "
                f"{free / 1e9:.1f} GB free and keeps {self.min_free_bytes / 1e9:.1f} GB "
                "(--min-free-disk): free some space, or delete models you no longer use"
            )
        if self.max_disk_bytes > 0:
            used = folder_bytes(cache)
            if used + needed > self.max_disk_bytes:
                raise NotEnoughDiskError(
                    f"{what} needs {needed / 1e9:.1f} GB more in the model cache, which holds "
                    f"{used / 1e9:.1f} GB of its {self.max_disk_bytes / 1e9:.1f} GB "
                    "(--max-model-disk): delete models you no longer use, or raise it"
                )

    def _cache(self) -> Path:
        from huggingface_hub import constants

        return self.cache_dir or Path(constants.HF_HUB_CACHE)

    def remove_stale_downloads(self) -> int:
        """Delete the partial downloads (`blobs/*.incomplete`) that no process is writing: those
        of a worker killed mid-download, which huggingface_hub deletes only when it fails in
        the worker itself. A download in progress holds its blob's lock
        (`.locks/<repo>/<etag>.lock`, huggingface_hub 2.4), so one of another server sharing
        the cache is kept. Returns the bytes freed."""
        from filelock import FileLock, Timeout

        cache = self._cache()
        freed = 0
        for partial in cache.glob("*/blobs/*.incomplete"):
            etag = partial.name.split(".", 1)[0]
            lock = FileLock(cache / ".locks" / partial.parent.parent.name / f"{etag}.lock")
            try:
                with lock.acquire(timeout=0):
                    size = partial.stat().st_size
                    partial.unlink()
            except (Timeout, OSError):
                continue  # being written, or already gone
            freed += size
            _LOGGER.info("Removed a partial download left by an earlier run: %s", partial)
        return freed

    def fetch_file(self, ref: FileRef) -> Path:
        """A local path to the single file `ref` names."""
        if ref.path is not None:
            if not ref.path.is_file():
                raise ModelFileError(
                    f"model file {ref.path} does not exist; fix 'path:' in the voice catalog"
                )
            return ref.path
        if ref.file is None:
            raise ModelFileError(f"{ref.repo} needs 'file:' (the file to use from that repo)")
        return self._download(ref.repo or "", ref.file, ref.revision)

    def fetch_folder(self, ref: FileRef, names: tuple[str, ...]) -> Path:
        """A local folder holding `names`: a `path:` folder, or a snapshot of those files of a
        repo (one listing of the repo and parallel downloads; files already cached cost no
        request each, which matters for Bark's 391 preset files). A name may be alternatives
        (`ALTERNATIVES`)."""
        if ref.path is not None:
            folder = ref.path
            advice = "fix 'path:' in the voice catalog"
        else:
            folder = self._snapshot(ref.repo or "", _file_names(names), ref.revision)
            advice = f"check the repo id ({ref.repo}) and its revision in the catalog"
        missing = [
            name.replace(ALTERNATIVES, " or ")
            for name in names
            if not any((folder / one).is_file() for one in name.split(ALTERNATIVES))
        ]
        if missing:
            more = (
                f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
            )
            raise ModelFileError(
                f"folder {folder} lacks {', '.join(missing[:MISSING_SHOWN])}{more}; " + advice
            )
        return folder

    def _download(self, repo: str, filename: str, revision: str | None) -> Path:
        # Imported here: huggingface_hub reads HF_HUB_OFFLINE and friends at import time.
        from huggingface_hub import hf_hub_download

        _LOGGER.info("Fetching %s/%s", repo, filename)
        with self._hub_errors(f"{repo}/{filename}"):
            path = hf_hub_download(
                repo,
                filename,
                revision=revision,
                cache_dir=self.cache_dir,
                local_files_only=self.offline,
                tqdm_class=_LoggedProgress,
            )
        return Path(str(path))

    def _snapshot(self, repo: str, names: list[str], revision: str | None) -> Path:
        from huggingface_hub import snapshot_download

        _LOGGER.info("Fetching %d files of %s", len(names), repo)
        with self._hub_errors(f"{repo} ({names[0]}, …)"):
            path = snapshot_download(
                repo,
                revision=revision,
                cache_dir=self.cache_dir,
                local_files_only=self.offline,
                allow_patterns=list(names),
                tqdm_class=_LoggedProgress,
            )
        return Path(str(path))

    @contextlib.contextmanager
    def _hub_errors(self, what: str) -> Iterator[None]:
        """Any failure of the hub (not cached offline, unreachable, unknown repo or file, disk)
        becomes one `ModelFileError` that says what to do."""
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            yield
        except LocalEntryNotFoundError as err:
            hint = (
                f"it is not in the cache and {self.offline_because}: download it once by hand "
                "(huggingface-cli download REPO), or point the catalog at a local file with "
                "'path:'"
                if self.offline
                else "the hub could not be reached and the file is not cached: check the "
                "network, or point the catalog at a local file with 'path:'"
            )
            raise ModelFileError(f"cannot get {what}: {hint}") from err
        except Exception as err:  # any hub/HTTP/disk failure becomes one clear error
            _LOGGER.warning("Downloading %s failed: %s: %s", what, type(err).__name__, err)
            hint = HUB_FAILURES.get(
                type(err).__name__,
                "check the repo id and file name in the catalog, and the network",
            )
            raise ModelFileError(
                f"downloading {what} failed ({type(err).__name__}; the server log has the "
                f"details): {hint}"
            ) from err


def _file_names(names: tuple[str, ...]) -> list[str]:
    """Every file a folder's list names, each of a name's `ALTERNATIVES` included."""
    return [one for name in names for one in name.split(ALTERNATIVES)]


def folder_bytes(folder: Path) -> int:
    """Bytes the regular files under `folder` take (symbolic links, such as a hub snapshot's
    links to its blobs, are not followed: each file counts once)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                info = os.lstat(os.path.join(root, name))
                total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def _existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (the cache is made on first download)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path
