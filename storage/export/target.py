"""Where an export goes: a local directory or an object-store prefix, through Arrow's
filesystems (S3, Google Cloud Storage, Azure Blob Storage), each with its ecosystem's usual
credential chain. Nothing here reads a credential: Arrow's SDKs do, the way the cloud's own CLI
would.

Every file lands whole or not at all: it is written under a temporary name beside its final
one (a name no reader globbing `*.parquet` matches, and one Spark, Hive and Athena skip: it
starts with a dot), then moved into place. On a local disk the move is a rename, atomic on
POSIX; an object store has no rename, so the move is a server-side copy (an object appears
whole) and the temporary object is deleted.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from collectors.common import ConfigError
from storage.export.staging import staging_folder, sweep

MANIFEST = "_manifest.json"
SCHEMES = ("s3", "gs", "az", "abfs", "abfss")
# A local export's staging folders, inside its root: a dot folder readers skip.
STAGING_PREFIX = ".export-"


class Target:
    """An export's root: a filesystem and the path of the root in it."""

    def __init__(self, fs: pafs.FileSystem, root: str, *, local: bool | None = None) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        # A local root is staged on the same disk and renamed into place (no second copy).
        self.local = isinstance(fs, pafs.LocalFileSystem) if local is None else local

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def existing(self) -> set[str]:
        """Every file under the root, relative to it (one listing; an object store pages it)."""
        selector = pafs.FileSelector(self.root, allow_not_found=True, recursive=True)
        prefix = len(self.root) + 1
        return {
            info.path[prefix:]
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        }

    def sweep(self) -> None:
        """Remove the staging folders of exports that died (kill -9, a power cut): the next
        export's first step. Nothing is removed, and nothing fails, on a read-only target."""
        sweep(*self._staging_place())

    def staging(self) -> AbstractContextManager[Path]:
        """A local folder to write files in before they are put: inside a local root (so a
        put is a rename on the same disk; a dot folder readers skip), else one in the system's
        temporary directory. Either way owned while the export runs, and the folders of
        exports that died are swept (`storage.export.staging`)."""
        return staging_folder(*self._staging_place())

    def _staging_place(self) -> tuple[Path, str]:
        if not self.local:
            return Path(tempfile.gettempdir()), "gpu-tracker-export-"
        return Path(self.root), STAGING_PREFIX

    def put(self, local: Path, relative: str) -> None:
        """Put the staged file `local` at `relative`, whole or not at all."""
        final = self.path(relative)
        folder, _, name = final.rpartition("/")
        self.fs.create_dir(folder, recursive=True)
        if self.local:  # staged under the root with a name no reader takes: rename it in
            self.fs.move(local.as_posix(), final)
            return
        temporary = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        with self._removed_on_failure(temporary):
            with local.open("rb") as source, self.fs.open_output_stream(temporary) as sink:
                while chunk := source.read(1 << 22):
                    sink.write(chunk)
            self._move(temporary, final)

    def put_bytes(self, data: bytes, relative: str) -> None:
        final = self.path(relative)
        folder, _, name = final.rpartition("/")
        self.fs.create_dir(folder, recursive=True)
        temporary = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        with self._removed_on_failure(temporary):
            with self.fs.open_output_stream(temporary) as sink:
                sink.write(data)
            self._move(temporary, final)

    def delete(self, relative: str) -> None:
        with suppress(FileNotFoundError):
            self.fs.delete_file(self.path(relative))

    def read_manifest(self) -> dict[str, Any]:
        try:
            with self.fs.open_input_stream(self.path(MANIFEST)) as source:
                data: dict[str, Any] = json.loads(source.read())
        except FileNotFoundError:
            return {}
        return data

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.put_bytes(json.dumps(manifest, indent=1, sort_keys=True).encode(), MANIFEST)

    @contextmanager
    def _removed_on_failure(self, temporary: str) -> Iterator[None]:
        """A write that failed half way (a full disk, a dropped connection) leaves no part
        of the file behind, not even under its hidden name."""
        try:
            yield
        except BaseException:
            with suppress(OSError):
                self.fs.delete_file(temporary)
            raise

    def _move(self, source: str, destination: str) -> None:
        try:
            self.fs.move(source, destination)
        except NotImplementedError:  # pyarrow's ArrowNotImplementedError is one
            # Azure without a hierarchical namespace cannot move: copy (atomic) and delete.
            self.fs.copy_file(source, destination)
            self.fs.delete_file(source)


def open_target(to: str, *, azure_account: str | None = None) -> Target:
    """The target `to` names: a local directory, or `s3://bucket/prefix`, `gs://bucket/prefix`,
    `az://container/prefix` (the account from `azure_account`) or an `abfs[s]://` URL. Query
    parameters Arrow knows pass through (`s3://b/p?endpoint_override=...&region=...`)."""
    scheme = to.split("://", 1)[0].lower() if "://" in to else ""
    if not scheme:
        local = Path(to).expanduser().resolve()
        return Target(pafs.LocalFileSystem(), local.as_posix())
    if scheme not in SCHEMES:
        raise ConfigError(
            f"--to {to}: unknown scheme {scheme}://; give a directory or an s3://, gs:// or "
            "az:// URL"
        )
    if scheme == "az":
        return _azure(to, azure_account)
    try:
        fs, root = pafs.FileSystem.from_uri(to)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"--to {to}: {exc}") from exc
    return Target(fs, root)


def _azure(to: str, account: str | None) -> Target:
    rest = to.split("://", 1)[1].split("?", 1)[0].strip("/")
    if not rest:
        raise ConfigError(f"--to {to}: name the container, like az://container/prefix")
    if not account:
        raise ConfigError(
            f"--to {to}: the Azure storage account is not known; set AZURE_STORAGE_ACCOUNT_NAME "
            "or give abfss://container@ACCOUNT.dfs.core.windows.net/prefix"
        )
    return Target(pafs.AzureFileSystem(account), rest)
