"""Where results go, and the promise that l4slab never destroys what it did not write.

A bundle is written into a hidden directory beside the target (``.NAME.tmp-PID-RANDOM``),
created before the simulation starts (the packet trace streams into it, and it proves
the target is writable), and renamed into place only when every file is complete, so an
error, Ctrl-C or SIGTERM never leaves a half-written bundle.

l4slab never destroys what it did not write. The manifest lists the files l4slab wrote
into a directory (a run's, ``l4slab report``'s, ``l4slab compare``'s); an existing
directory is replaced only when the manifest accounts for every file in it
(:func:`check_output_dir`), and only the files it lists are ever removed. Writers that
add to a directory (the report, a comparison) replace only the files they wrote there
before (:func:`write_files`). A directory without a manifest, even one with a
``summary.json`` (an older l4slab's bundle), is never replaced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from l4slab.results import Results

__all__ = [
    "BUNDLE_FILES",
    "MANIFEST_FILE",
    "PACKETS_FILE",
    "PCAP_DIR",
    "REPORT_FILES",
    "RUN_FILE",
    "RUN_FORMAT_VERSION",
    "SERIES_FILE",
    "STRING_SOURCE",
    "SUMMARY_FILE",
    "Manifest",
    "OutputDirError",
    "OutputWarning",
    "RunStaging",
    "bundle_complete",
    "check_output_dir",
    "check_same_scenario",
    "clean_stale_staging",
    "output_path",
    "read_manifest",
    "shown_names",
    "staging_dir",
    "write_bundle",
    "write_files",
    "write_manifest",
]

SUMMARY_FILE = "summary.json"
SERIES_FILE = "series.parquet"
PACKETS_FILE = "packets.parquet"
#: The folder of the pcap capture files (``pcap = true``; crates/l4slab-pcap).
PCAP_DIR = "pcap"
RUN_FILE = "run.json"
#: The manifest: every file l4slab wrote into a directory, and which command wrote it.
MANIFEST_FILE = ".l4slab-manifest.json"
#: The files ``l4slab run`` writes (besides the manifest).
BUNDLE_FILES = (SUMMARY_FILE, SERIES_FILE, PACKETS_FILE, RUN_FILE)
#: What ``l4slab report`` adds to a bundle (see l4slab.report).
REPORT_FILES = ("report.html", "figures")

#: Version of the run.json layout (summary.json carries its own format_version).
RUN_FORMAT_VERSION = 1
#: Version of the manifest's layout.
MANIFEST_FORMAT_VERSION = 1


class OutputDirError(OSError):
    """The output directory cannot be used (e.g. it is not writable); nothing was run."""


class OutputWarning(UserWarning):
    """Something about an output directory the user should know (a leftover left alone)."""


# --------------------------------------------------------------------------- manifest


@dataclass
class Manifest:
    """``.l4slab-manifest.json``: the files l4slab wrote into a directory.

    ``files`` maps each file's path (relative, with ``/``) to what wrote it: ``"run"``,
    ``"report"``, ``"compare"`` or ``"reproduce"``. ``scenario`` records the run's
    scenario name and source file, so a run never silently replaces another scenario's
    results. Keys this version does not know are kept.
    """

    files: dict[str, str] = field(default_factory=dict)
    scenario: dict[str, Any] | None = None
    tool_version: str | None = None
    other: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        document = {
            **self.other,
            "format_version": MANIFEST_FORMAT_VERSION,
            "written_by": "l4slab",
            "tool_version": self.tool_version,
            "scenario": self.scenario,
            "files": dict(sorted(self.files.items())),
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse a manifest; ``ValueError`` says what is wrong with it."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(document, dict) or document.get("written_by") != "l4slab":
            raise ValueError("not an l4slab manifest")
        files = document.get("files")
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _is_plain_relative(k)
            for k, v in files.items()
        ):
            raise ValueError('"files" must map relative paths to the command that wrote them')
        scenario = document.get("scenario")
        version = document.get("tool_version")
        other = {
            k: v
            for k, v in document.items()
            if k not in ("format_version", "written_by", "tool_version", "scenario", "files")
        }
        return cls(
            dict(files),
            scenario if isinstance(scenario, dict) else None,
            str(version) if version is not None else None,
            other,
        )


def read_manifest(directory: str | os.PathLike[str]) -> Manifest | None:
    """The manifest of ``directory``, or ``None`` if it has none.

    Raises ``ValueError`` when there is a manifest but it cannot be read.
    """
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return Manifest.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable manifest: {exc}") from None


def _is_plain_relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not PurePosixPath(path).is_absolute() and ".." not in parts


def _put_manifest(directory: Path, manifest: Manifest, staging: Path) -> None:
    """Replace ``directory``'s manifest atomically (written in ``staging``, then renamed)."""
    fresh = staging / MANIFEST_FILE
    fresh.write_text(manifest.to_json(), encoding="utf-8")
    fresh.replace(directory / MANIFEST_FILE)


# --------------------------------------------------------------------------- the output guard


def output_path(out: str | os.PathLike[str]) -> Path:
    """Where a bundle for ``-o out`` goes: ``out`` itself, or, when ``out`` is a symbolic
    link, the directory it points to (the link is followed, never replaced)."""
    target = Path(out)
    if target.name in ("", ".", ".."):
        target = target.resolve()
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    return target


def existing_output(
    target: Path, refusing: str, advice: str = ""
) -> tuple[list[str], Manifest | None]:
    """What output directory ``target`` holds: its names, sorted (none if it does not
    exist), and its manifest (``None`` without one or when it holds nothing). Raises
    ``FileExistsError`` if it is not a directory, or if its manifest cannot be read:
    ``refusing`` (e.g. ``refusing to replace DIR``), the reason, then ``advice``."""
    if not target.exists():
        return [], None
    if not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory; choose another -o")
    entries = sorted(entry.name for entry in target.iterdir())
    if not entries:
        return [], None
    try:
        return entries, read_manifest(target)
    except ValueError as exc:
        raise FileExistsError(f"{refusing}: {exc}{advice}") from None


def check_output_dir(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` may receive a bundle.

    It may if it does not exist, is an empty directory, or holds only files that its
    manifest lists as written by l4slab (a previous bundle, with its report). Any other
    directory is refused, naming what l4slab did not write, so a re-run or a mistyped
    ``-o`` never deletes anyone's files. A directory without a manifest is refused even
    if it holds a ``summary.json`` (bundles of earlier l4slab versions have none).
    """
    target = output_path(path)
    entries, manifest = existing_output(
        target,
        f"refusing to replace {target}",
        "; move the directory away or choose another output directory (-o)",
    )
    if not entries:
        return
    shown = shown_names(entries)
    if manifest is None and any(name in entries for name in (SUMMARY_FILE, "study.json")):
        raise FileExistsError(
            f"refusing to replace {target}: it holds {shown} but no {MANIFEST_FILE}, so "
            "nothing proves l4slab wrote all of it (results of earlier l4slab versions have "
            "no manifest). Move or remove it yourself, or choose another output directory (-o)"
        )
    if manifest is None:
        raise FileExistsError(
            f"refusing to replace {target}: it is not an l4slab results directory "
            f"(it holds {shown}); choose another output directory (-o) or remove it"
        )
    strangers = _strangers(target, manifest)
    if strangers:
        one = len(strangers) == 1
        raise FileExistsError(
            f"refusing to replace {target}: {shown_names(strangers)} {'is' if one else 'are'} "
            f"not l4slab's (not in its {MANIFEST_FILE}); move {'it' if one else 'them'} out "
            "of the results directory, or choose another output directory (-o)"
        )


def check_same_scenario(path: str | os.PathLike[str], name: str, source: str | None) -> None:
    """Raise ``FileExistsError`` if the bundle at ``path`` holds another scenario's results.

    ``l4slab run`` without ``-o`` writes to ``results/<name made safe>``, and two
    scenario names (``a b``, ``a-b``) or two files with the same name can land in the
    same directory. The manifest records each run's scenario name and source file;
    another one there is refused, suggesting ``-o``.
    """
    target = output_path(path)
    try:
        manifest = read_manifest(target) if target.is_dir() else None
    except ValueError:
        return  # check_output_dir refuses it
    if manifest is None or manifest.scenario is None:
        return
    old_name = manifest.scenario.get("name")
    old_source = manifest.scenario.get("source")
    files = [s for s in (old_source, source) if s is not None and s != STRING_SOURCE]
    if old_name == name and (len(files) < 2 or old_source == source):
        return
    raise FileExistsError(
        f"refusing to replace {target}: it holds the results of scenario {old_name!r} "
        f"({old_source or 'source unknown'}), and this run is scenario {name!r} ({source}); "
        "both go to the same directory. Give this run its own with -o DIR "
        f"(e.g. -o {target}-2), or remove {target} if you no longer need it"
    )


#: The ``source`` of a scenario given as TOML text rather than a file.
STRING_SOURCE = "<string>"


def _strangers(directory: Path, manifest: Manifest) -> list[str]:
    """Everything under ``directory`` its manifest does not account for, as relative paths.

    Listed files and the manifest are accounted for, and directories holding only those
    (or nothing); symbolic links and anything else are not.
    """
    listed = set(manifest.files)
    found: list[str] = []

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_symlink():
                found.append(f"{rel} (a symbolic link)")
            elif entry.is_dir(follow_symlinks=False):
                walk(Path(entry.path), rel + "/")
            elif not entry.is_file(follow_symlinks=False) or (
                rel not in listed and rel != MANIFEST_FILE
            ):
                found.append(rel)

    walk(directory, "")
    return found


def shown_names(names: Sequence[str], limit: int = 3) -> str:
    """``a, b, c and 2 more``: the first ``limit`` names of a list, for a message."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# --------------------------------------------------------------------------- staging


_STAGING_NAME = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}")
#: File names l4slab writes (anywhere in a bundle or a study), besides figures.
_OWN_NAMES = frozenset(
    (*BUNDLE_FILES, MANIFEST_FILE, "report.html", "compare.html", "study.json", "table.md")
)


def clean_stale_staging(path: str | os.PathLike[str]) -> list[str]:
    """Deal with the hidden directories killed runs left beside ``path``; return notes.

    A run writes into ``.NAME.tmp-PID-RANDOM`` and moves an old bundle aside to
    ``.NAME.old-PID-RANDOM``; a run killed by SIGKILL or a power cut leaves them. One
    whose process is gone and which holds only files l4slab writes is removed (an old
    bundle whose replacement never arrived is put back instead); one that holds
    anything else, or whose process still runs, is left alone and reported.
    """
    target = output_path(path)
    parent = target.parent
    notes: list[str] = []
    if not parent.is_dir():
        return notes
    for entry in sorted(parent.iterdir()):
        match = _STAGING_NAME.fullmatch(entry.name)
        if match is None or match["name"] != target.name:
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        pid = int(match["pid"])
        if pid == os.getpid():
            continue
        if _alive(pid):
            notes.append(f"left {entry} alone: process {pid}, which is still running, writes it")
            continue
        foreign = _foreign_files(entry)
        if foreign:
            notes.append(
                f"left {entry} alone: a killed run (process {pid}) left it, but it holds "
                f"{shown_names(foreign)}, which l4slab does not write; look inside, then remove it"
            )
            continue
        if match["kind"] == "old" and not target.exists() and not target.is_symlink():
            entry.rename(target)
            notes.append(f"put back {target}: a run killed while replacing it left it aside")
            continue
        shutil.rmtree(entry, ignore_errors=True)
        notes.append(f"removed {entry}, left by a killed run (process {pid})")
    return notes


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 probes without signalling)."""
    if sys.platform == "win32":
        return True  # os.kill would end the process there: never judge a leftover dead
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    return True


def _foreign_files(folder: Path) -> list[str]:
    """Files under ``folder`` whose names l4slab never writes (figures are ``*.png|svg``)."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        for name in sorted(dirs):
            if (Path(root) / name).is_symlink():
                found.append(str(rel_root / name))
        for name in sorted(files):
            path = Path(root) / name
            figure = Path(root).name == "figures" and path.suffix in (".png", ".svg")
            if path.is_symlink() or not (name in _OWN_NAMES or figure):
                found.append(str(rel_root / name))
    return found


def _make_staging(target: Path) -> Path:
    """Create a hidden directory beside ``target`` (``OutputDirError`` if impossible)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _sibling(target, "tmp")
        tmp.mkdir()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        raise OutputDirError(
            f"cannot write results to {target}: {reason}{where}; choose a directory you can "
            "write to (-o)"
        ) from None
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        tmp.rmdir()
        raise OutputDirError(
            f"cannot replace {target}: permission denied; choose a directory you can write to (-o)"
        )
    return tmp


class RunStaging:
    """The hidden directory a run's bundle is written into, beside its target.

    Creating it is the first thing a run does, before simulating: an unwritable target
    fails at once (:class:`OutputDirError`). The packet trace streams into it
    (:attr:`packets`, the native run's ``packets_sink``); :meth:`finish` writes the other
    files and the manifest. Used as a context manager it is renamed into place when the
    block ends without an exception (the target checked again, see
    :func:`check_output_dir`) and removed, with everything in it, when one escapes.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        # pyarrow (through _parquet) is imported when a bundle is written, not with this
        # module, whose checks the command line and l4slab.check use (issue 32).
        from l4slab._parquet import PacketWriter

        self.path = _make_staging(target)
        self.packets = PacketWriter(self.path / PACKETS_FILE)
        self._finished = False

    @property
    def packets_path(self) -> Path:
        return self.path / PACKETS_FILE

    def finish(self, results: Results) -> None:
        """Write summary.json, series.parquet, run.json and the manifest."""
        from l4slab._parquet import write_parquet

        self.packets.close()
        tmp = self.path
        (tmp / SUMMARY_FILE).write_bytes((results.summary_text + "\n").encode("utf-8"))
        write_parquet(results.series_table, tmp / SERIES_FILE)
        run_text = json.dumps(results.run_info, indent=2, sort_keys=True) + "\n"
        (tmp / RUN_FILE).write_bytes(run_text.encode("utf-8"))
        files = {name: "run" for name in BUNDLE_FILES if (tmp / name).is_file()}
        files.update(
            {f"{PCAP_DIR}/{p.name}": "run" for p in sorted(tmp.glob(f"{PCAP_DIR}/*.pcap"))}
        )
        manifest = Manifest(
            files=files,
            scenario={"name": results.name, "source": results._source},
            tool_version=results.tool_version,
        )
        (tmp / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")
        self._finished = True

    def commit(self) -> None:
        """Move the finished bundle into place, replacing an earlier one."""
        if not self._finished:
            raise RuntimeError("RunStaging.commit before finish")
        check_output_dir(self.target)
        _replace_dir(self.path, self.target)

    def abort(self) -> None:
        """Remove the staging directory and everything in it."""
        with suppress(Exception):  # a half-written file is removed anyway
            self.packets.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> RunStaging:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None:
            self.abort()
            return
        try:
            self.commit()
        except BaseException:
            self.abort()
            raise


@contextmanager
def staging_dir(target: Path) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``target``; on success rename it to ``target``.

    On any exception, including ``KeyboardInterrupt``, the staging directory is
    removed and ``target`` is left as it was. An existing ``target`` is replaced as
    :func:`_replace_dir` does: only the files its manifest lists are removed. A
    symlinked ``target`` is followed (:func:`output_path`).
    """
    target = output_path(target)
    tmp = _make_staging(target)
    try:
        yield tmp
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def bundle_complete(folder: Path) -> bool:
    """Whether a results bundle is in place at ``folder``: l4slab renames a bundle in
    only once it is complete, so its summary.json and manifest are there exactly then."""
    return (folder / SUMMARY_FILE).is_file() and (folder / MANIFEST_FILE).is_file()


def write_bundle(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write a bundle's files (relative path -> bytes, as a remote worker sends them
    back) at ``folder``, atomically: a hidden sibling renamed into place."""
    with staging_dir(folder) as tmp:
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def _replace_dir(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``; an existing ``target`` is moved aside first and
    then emptied of the files its manifest lists. Anything else in it is kept, in the
    moved-aside directory, with an :class:`OutputWarning` naming it."""
    if target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
        new.replace(target)  # an empty directory is replaced in one step
        return
    if not target.exists():
        new.rename(target)
        return
    earlier = _described(target)
    old = _sibling(target, "old")
    target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        old.rename(target)
        raise
    kept = _remove_own_files(old)
    warnings.warn(f"replaced {target} ({earlier})", OutputWarning, stacklevel=3)
    if kept:
        warnings.warn(
            f"kept {old}: it holds {shown_names(kept)}, which appeared in {target} during the "
            "run and l4slab did not write; the new results are in place",
            OutputWarning,
            stacklevel=3,
        )


def _described(folder: Path) -> str:
    """What an output folder l4slab wrote held, and when, for the note that it
    was replaced: ``the results of scenario 'x' (x.toml), written 2026-12-07
    11:40`` or ``what l4slab check-l4s wrote, written ...``."""
    try:
        manifest = read_manifest(folder)
        written = (folder / MANIFEST_FILE).stat().st_mtime
    except (ValueError, OSError):
        return "an earlier l4slab output"
    if manifest is None:
        return "an earlier l4slab output"
    what = "what l4slab " + "/".join(sorted(set(manifest.files.values()))) + " wrote"
    if manifest.scenario is not None:
        name, source = manifest.scenario.get("name"), manifest.scenario.get("source")
        what = f"the results of scenario {name!r}" + (f" ({source})" if source else "")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(written))
    return f"{what}, written {when}"


def _remove_own_files(folder: Path) -> list[str]:
    """Delete the files ``folder``'s manifest lists, then it if empty; return what is left."""
    try:
        manifest = read_manifest(folder)
    except ValueError:
        manifest = None
    if manifest is not None:
        for rel in manifest.files:
            if _own_file(folder, rel):
                (folder / rel).unlink()
        (folder / MANIFEST_FILE).unlink(missing_ok=True)
    _remove_empty_dirs(folder)
    if not folder.exists():
        return []
    return _strangers(folder, Manifest())


def _own_file(folder: Path, rel: str) -> bool:
    """Whether ``folder/rel`` is a regular file reached through real directories only
    (a symlinked ``figures/`` may point at someone else's files)."""
    path = folder / rel
    for parent in list(PurePosixPath(rel).parents)[:-1]:
        if (folder / parent).is_symlink() or not (folder / parent).is_dir():
            return False
    return path.is_file() and not path.is_symlink()


def _remove_empty_dirs(folder: Path) -> None:
    """Remove empty directories under ``folder``, bottom up, and ``folder`` if it ends empty."""
    for root, dirs, _files in os.walk(folder, topdown=False):
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                with suppress(OSError):
                    path.rmdir()
    with suppress(OSError):
        folder.rmdir()


def _sibling(target: Path, tag: str) -> Path:
    # os.urandom is what secrets.token_hex draws from, without importing hmac and OpenSSL.
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{os.urandom(4).hex()}"


# --------------------------------------------------------------------------- adding files


def write_manifest(directory: str | os.PathLike[str], writer: str) -> None:
    """Write ``directory``'s manifest listing every file under it as ``writer``'s.

    For a directory l4slab has just filled in a staging directory (a study's results).
    """
    folder = Path(directory)
    files = {
        path.relative_to(folder).as_posix(): writer
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not path.is_symlink()
        and path.relative_to(folder).as_posix() != MANIFEST_FILE
    }
    manifest = Manifest(files=files, tool_version=_tool_version())
    (folder / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")


def _tool_version() -> str | None:
    try:
        from l4slab import _native
    except ImportError:
        return None
    return str(_native.__version__)


def write_files(
    directory: str | os.PathLike[str],
    writer: str,
    files: Mapping[str, bytes],
    *,
    remove_stale: bool = True,
) -> Path:
    """Write ``files`` (relative path → content) into ``directory`` as ``writer``.

    What ``l4slab report`` and ``l4slab compare`` use. The files ``writer`` wrote there
    before (per the manifest) and does not write now are removed (unless
    ``remove_stale`` is false: ``l4slab plot-sweep`` adds one figure at a time); every
    other file is left alone. A file to write that exists and is not ``writer``'s (per the manifest)
    is refused with ``FileExistsError`` before anything is written. The manifest claims
    the files before they appear, so a killed write never leaves unlisted files. Returns
    the directory. What an earlier write killed by SIGKILL left beside ``directory``
    is cleaned first (:func:`clean_stale_staging`; each note an :class:`OutputWarning`).
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for note in clean_stale_staging(target):
        warnings.warn(note, OutputWarning, stacklevel=2)
    try:
        manifest = read_manifest(target) or Manifest()
    except ValueError as exc:
        raise FileExistsError(
            f"refusing to write into {target}: {exc}; move the directory away or choose another one"
        ) from None
    conflicts = [rel for rel in files if _blocked(target, rel, manifest, writer)]
    if conflicts:
        one = len(conflicts) == 1
        raise FileExistsError(
            f"refusing to overwrite {shown_names(conflicts)} in {target}: l4slab {writer} did not "
            f"write {'it' if one else 'them'} (not in {MANIFEST_FILE}); move "
            f"{'it' if one else 'them'} away, or write somewhere else"
        )
    stale = sorted(
        rel
        for rel, w in manifest.files.items()
        if remove_stale and w == writer and rel not in files
    )
    staging = _make_staging(target)
    try:
        for rel, data in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
        claimed = dict(manifest.files)
        claimed.update(dict.fromkeys(files, writer))
        manifest.files = claimed
        _put_manifest(target, manifest, staging)
        for rel in files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).replace(target / rel)
        for rel in stale:
            if _own_file(target, rel):
                (target / rel).unlink()
                _remove_empty_parents((target / rel).parent, target)
            del claimed[rel]
        _put_manifest(target, manifest, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _blocked(target: Path, rel: str, manifest: Manifest, writer: str) -> bool:
    """Whether writing ``rel`` would overwrite something that is not ``writer``'s."""
    path = target / rel
    for parent in list(PurePosixPath(rel).parents)[:-1]:
        folder = target / parent
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return True
    if not path.exists() and not path.is_symlink():
        return False
    return path.is_symlink() or not path.is_file() or manifest.files.get(rel) != writer


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not folder.is_symlink():
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
