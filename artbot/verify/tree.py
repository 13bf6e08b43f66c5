"""Where ART's source is: a git checkout, an unpacked wheel, or the ``art/`` folder itself."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import BadInput
from ..records.models import Audit
from .isolation import ArtModules

DISTRIBUTION = "openpipe-art"
WHEEL_PREFIX = "openpipe_art"


@dataclass(frozen=True)
class ArtTree:
    """Where ART's source is: ``package_dir``, the ``art/`` folder code checks import;
    ``packages``, the distribution's other top-level packages (0.5.21's ``art_inference``).
    Anchors are read from the checkout's objects at ``commit`` when set (:mod:`.gitread`),
    else from ``package_dir``."""

    label: str
    package_dir: Path
    source_root: str
    git_dir: Path | None = None
    commit: str | None = None
    notes: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    sha256: str | None = None  # of the release's wheel, when the tree is one

    def modules(self) -> ArtModules:
        """A fresh import context for this tree's packages."""
        return ArtModules(self.package_dir, siblings=self.packages)

    def read(self, path: str) -> str | None:
        """Text of an audited path (``src/art/...``), or None when the file is absent."""
        if self.git_dir is not None and self.commit is not None:
            from .gitread import reader

            data = reader(self.git_dir).blob(self.commit, path)
            return data.decode("utf-8", errors="replace") if data is not None else None
        file = self.package_dir / path.removeprefix(self.source_root)
        try:
            return file.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None


def open_tree(
    directory: Path, audit: Audit, *, label: str | None = None, wheel: bool = False
) -> ArtTree:
    """Recognise ``directory`` (made absolute): a git checkout, a folder holding ``art/`` (an
    unpacked wheel), or the ``art/`` folder itself. An unpacked ``wheel`` is never taken for a
    checkout, whatever it holds."""
    directory = Path(directory).absolute()
    tree = _recognise(directory, audit, label, wheel)
    # In a checkout with a src/ layout, the packages beside art/ are the same project's.
    src_layout = tree.package_dir.parent != directory and (directory / tree.source_root).is_dir()
    return replace(tree, packages=distribution_packages(tree.package_dir, src_layout))


def _recognise(directory: Path, audit: Audit, label: str | None, wheel: bool) -> ArtTree:
    root = audit.source_root.rstrip("/") + "/"
    package = root.rstrip("/").rsplit("/", 1)[-1]
    if not directory.is_dir():
        raise BadInput(f"--art-src {directory}: not a directory")
    if not wheel and (directory / ".git").exists() and (directory / root).is_dir():
        from .gitread import partial_clone, reader

        package_dir = directory / root
        full = reader(directory).resolve(audit.commit)
        partial = (
            ("a partial clone: a file whose object it has not fetched reads as missing (artbot "
             "fetches nothing)",) if partial_clone(directory) else ()
        )  # fmt: skip
        if full is not None:
            return ArtTree(
                label=f"{directory} at {audit.commit}",
                package_dir=package_dir,
                source_root=root,
                git_dir=directory,
                commit=full,
                notes=(
                    f"anchors read at the audit commit {audit.commit}; code runs the working tree",
                    *partial,
                ),
            )
        return ArtTree(
            label=label or f"{directory} (working tree)",
            package_dir=package_dir,
            source_root=root,
            notes=(
                f"the audit commit {audit.commit} is not in {directory}; "
                "anchors read from the working tree",
                *partial,
            ),
        )
    if (directory / root).is_dir():
        return ArtTree(
            label or str(directory),
            directory / root,
            root,
            notes=("not a git repository; files read as they are",),
        )
    if (directory / package).is_dir():
        return ArtTree(
            label or _wheel_label(directory) or str(directory), directory / package, root
        )
    if directory.name == package and (directory / "__init__.py").is_file():
        return ArtTree(label or _wheel_label(directory.parent) or str(directory), directory, root)
    raise BadInput(
        f"--art-src {directory}: expected a git checkout with {root}, a folder holding "
        f"{package}/ (an unpacked wheel) or the {package}/ folder itself"
    )


def distribution_packages(package_dir: Path, src_layout: bool) -> tuple[str, ...]:
    """Top-level packages shipped with ``art/``: a wheel's RECORD names them; in a src/
    checkout they are the packages beside it; otherwise ``art`` alone."""
    parent = package_dir.parent
    records = sorted(parent.glob(f"{WHEEL_PREFIX}-*.dist-info/RECORD"))
    if records:
        paths = (row.split(",", 1)[0] for row in records[0].read_text("utf-8").splitlines())
        tops = {p.split("/", 1)[0] for p in paths if "/" in p}
    elif src_layout:
        tops = {d.name for d in parent.iterdir()}
    else:
        tops = set()
    found = {t for t in tops if (parent / t / "__init__.py").is_file()}
    return tuple(sorted(found | {package_dir.name}))


def _wheel_label(folder: Path) -> str | None:
    """``openpipe-art 0.5.21`` when ``folder`` holds the wheel's dist-info."""
    for meta in sorted(folder.glob(f"{WHEEL_PREFIX}-*.dist-info")):
        version = meta.name[len(WHEEL_PREFIX) + 1 : -len(".dist-info")]
        return f"{DISTRIBUTION} {version}"
    return None
