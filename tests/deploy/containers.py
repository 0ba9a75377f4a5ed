"""Building and running the images with podman, as this machine allows it.

- runc, not crun (crun fails on this cgroup setup), and lowered ulimits: `podman --runtime runc`
  with `--ulimit nofile=1024:1024 --ulimit nproc=1024:1024`;
- no image registry: the base is a local Debian made by `debootstrap --variant=minbase` with
  python3 and `podman import`ed (its root file system cached as a tarball in
  ~/.cache/tablequeue/images/, the image tagged by the recipe's hash);
- pip reaches PyPI with `--network host` and the machine's pip configuration and CA certificate
  mounted into the build steps (never into the image);
- image builds are cached by content: the tag is a hash of the base image, the Dockerfile and
  every file the build copies, so a warm machine builds nothing; the dependency stage is tagged
  by the lock files' hash, so a change of the sources reinstalls nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tablequeue.pipeline.spark import JAR_CACHE, driver_jars
from tests.support.deploy_tools import SETUP_SCRIPT, system_tool

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tablequeue" / "images"
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
BASE_SUITE = "bookworm"
BASE_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ["python3", "python3-venv", "ca-certificates"]
BASE_RECIPE = 1
"""Bump when the base image's recipe changes in a way the lines above do not show."""
BUILD_CONTEXT = [
    "requirements/operator.lock",
    "requirements/pipeline.lock",
    "requirements/worker.lock",
    "pyproject.toml",
    "README.md",
    "tablequeue",
    "worker",
    "api",
    "operator",
    "pipeline",
    "cli",
]
"""What the Dockerfiles copy from the repository (the .containerignore allows just these)."""
BUILD_OPTIONS = ["--format=docker", "--network=host", "--pull=never"]
"""docker format: the OCI image config has no HEALTHCHECK (podman drops it there)."""
PIP_CONFIG = Path("/etc/pip.conf")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def podman(
    *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    command = [str(system_tool("podman")), "--runtime", str(system_tool("runc")), *args]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited {result.returncode}:\n{result.stdout[-4000:]}\n"
            f"{result.stderr[-6000:]}"
        )
    return result


def image_exists(tag: str) -> bool:
    return podman("image", "exists", tag, check=False).returncode == 0


def _hash(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:16]


def base_image() -> str:
    """The local Debian base (python3 3.11, as python:3.11-slim-bookworm has): built once per
    machine, about a minute; the root file system tarball is kept in the cache folder, so a
    machine whose podman storage was wiped only imports it again."""
    recipe = f"{BASE_SUITE} {BASE_MIRROR} {' '.join(BASE_PACKAGES)} {BASE_RECIPE}"
    key = _hash(recipe.encode())
    tag = f"localhost/tablequeue-test-base:{key}"
    if image_exists(tag):
        return tag
    tarball = CACHE / f"debian-{BASE_SUITE}-python3-{key}.tar"
    if not tarball.exists():
        _debootstrap(tarball)
    podman("import", "--change", "CMD=/bin/bash", str(tarball), tag)
    return tag


def _debootstrap(tarball: Path) -> None:
    debootstrap = system_tool("debootstrap")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tablequeue-rootfs-", dir=CACHE) as folder:
        root = Path(folder) / "root"
        subprocess.run(
            [
                str(debootstrap),
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                BASE_SUITE,
                str(root),
                BASE_MIRROR,
            ],
            check=True,
            capture_output=True,
            timeout=900,
        )
        # What the slim images leave out too: apt's lists and caches, documentation.
        for junk in ("var/lib/apt/lists", "var/cache/apt", "usr/share/doc", "usr/share/man"):
            shutil.rmtree(root / junk, ignore_errors=True)
        partial = tarball.with_suffix(".partial")
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."],
            check=True,
            capture_output=True,
        )
        partial.rename(tarball)


def _context_files() -> Iterator[Path]:
    for name in BUILD_CONTEXT:
        path = REPO / name
        if path.is_file():
            yield path
        else:
            yield from sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            )


def content_key(dockerfile: Path, base: str, contexts: Mapping[str, Path] | None = None) -> str:
    """A hash of what the image is built from: base, Dockerfile, ignore file, the copied files
    (and those of the named build `contexts`)."""
    parts = [base.encode(), " ".join(BUILD_OPTIONS).encode(), dockerfile.read_bytes()]
    parts.append((REPO / ".containerignore").read_bytes())
    for path in _context_files():
        parts += [str(path.relative_to(REPO)).encode(), path.read_bytes()]
    for name, folder in sorted((contexts or {}).items()):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            parts += [f"{name}:{path.relative_to(folder)}".encode(), path.read_bytes()]
    return _hash(*parts)


def build_image(dockerfile: str, name: str, contexts: Mapping[str, Path] | None = None) -> str:
    """Build Dockerfile.* from the local base, unless an image of the same content exists;
    `contexts` are named build contexts (`--build-context NAME=FOLDER`, `COPY --from=NAME`).

    Its `deps` stage (the locked dependencies) is tagged too, so that removing what older builds
    left behind keeps it as the build cache: a change of the sources reinstalls nothing."""
    with _one_build_at_a_time():
        return _build_image(dockerfile, name, contexts or {})


@contextmanager
def _one_build_at_a_time() -> Iterator[None]:
    """Another pytest (or worker) of this machine may build at the same time: interleaved, one's
    clean-up of older builds removes images while the other lists or tags them ("image not
    known"). Two checkouts of different content still untag each other's older builds."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_image(dockerfile: str, name: str, contexts: Mapping[str, Path]) -> str:
    base = base_image()
    path = REPO / dockerfile
    tag = f"localhost/{name}:test-{content_key(path, base, contexts)}"
    if image_exists(tag):
        return tag
    if not PIP_CONFIG.exists() or not CA_BUNDLE.exists():
        raise AssertionError(f"{PIP_CONFIG} or {CA_BUNDLE} is missing: run {SETUP_SCRIPT}")
    options = [
        *ULIMITS,
        *BUILD_OPTIONS,
        f"--volume={PIP_CONFIG}:/etc/pip.conf:ro",
        f"--volume={CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro",
        f"--build-arg=BASE_IMAGE={base}",
        f"--file={path}",
        *(f"--build-context={key}={folder}" for key, folder in sorted(contexts.items())),
    ]
    deps = f"localhost/{name}-deps:test-{_hash(base.encode(), path.read_bytes(), *_locks())}"
    if not image_exists(deps):
        podman("build", *options, "--target=deps", f"--tag={deps}", str(REPO))
    podman("build", *options, f"--tag={tag}", str(REPO))
    _remove_older(name, tag)
    _remove_older(f"{name}-deps", deps)
    podman("image", "prune", "--force", check=False)  # untagged: older builds, build stages
    return tag


def _locks() -> list[bytes]:
    return [path.read_bytes() for path in sorted((REPO / "requirements").glob("*.lock"))]


def _remove_older(name: str, keep: str) -> None:
    """Untag this image's builds of other contents (one in use by a container stays)."""
    listed = podman("images", "--format", "{{.Repository}}:{{.Tag}}", f"localhost/{name}")
    for reference in listed.stdout.split():
        if reference != keep and ":test-" in reference:
            podman("rmi", reference, check=False)


def image_size(tag: str) -> int:
    """The image's size in bytes, as podman reports it."""
    return int(podman("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def image_config(tag: str, template: str) -> str:
    return podman("image", "inspect", "--format", template, tag).stdout.strip()


EXAMPLE_APP = REPO / "examples" / "app"


def build_example_app() -> str:
    """examples/app (the HTTP handler of the docs and the node tests) from the local base."""
    base = base_image()
    files = [EXAMPLE_APP / "Dockerfile", EXAMPLE_APP / "app.py"]
    key = _hash(base.encode(), *(f.read_bytes() for f in files))
    tag = f"localhost/tablequeue-example-app:test-{key}"
    with _one_build_at_a_time():
        if not image_exists(tag):
            podman(
                "build", *ULIMITS, "--pull=never", f"--build-arg=BASE_IMAGE={base}",
                f"--tag={tag}", str(EXAMPLE_APP),
            )  # fmt: skip
            _remove_older("tablequeue-example-app", tag)
    return tag


def build_pipeline_image(staging: Path) -> str:
    """Dockerfile.pipeline with the JDBC drivers the pipeline takes from the jar cache that
    scripts/setup-pipeline fills (Debian's it installs itself), one folder a version as there,
    copied into `staging` as the build context `jars`: other jars of the cache (s3a's 686 MB
    AWS SDK bundle) would be hashed into the content key for nothing."""
    for jar in map(Path, driver_jars(JAR_CACHE)):
        if jar.parent.parent == JAR_CACHE:
            (staging / jar.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(jar, staging / jar.parent.name / jar.name)
    return build_image("Dockerfile.pipeline", "tablequeue-pipeline", {"jars": staging})
