"""tools/deploy/keda_scalers.py: the copy of KEDA the tests build keeps the SQL scalers and KEDA's
own code, and a KEDA release it cannot trim the same way (no markers, a kept scaler gone) stops
the build with the reason instead of building something else. That the trimmed operator scales
real Deployments is tests/deploy/test_autoscaling_keda.py's and the node's."""

from __future__ import annotations

import filecmp
import re
import subprocess
import sys
from pathlib import Path

from tests.support.deploy_tools import REPO

SCRIPT = REPO / "tools" / "deploy" / "keda_scalers.py"
KEDA_MODULE = REPO / "tools" / "deploy" / "keda"
BUILDER = Path("pkg/scaling/scalers_builder.go")


def _keda_source() -> Path:
    """KEDA's module folder, as scripts/build-deploy-tools finds it (the Go module cache)."""
    found = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "github.com/kedacore/keda/v2"],
        cwd=KEDA_MODULE,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip())


def _trim(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), "--source", str(source), "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _cases(builder: Path) -> list[str]:
    switch = builder.read_text().split("TRIGGERS-START")[1].split("TRIGGERS-END")[0]
    return re.findall(r'^\tcase "([^"]+)":$', switch, re.MULTILINE)


def test_the_copy_keeps_the_sql_scalers_and_the_rest_of_keda_unchanged(tmp_path: Path) -> None:
    source = _keda_source()
    copy = tmp_path / "keda"
    done = _trim(source, copy)
    assert done.returncode == 0, done.stderr

    assert sorted(p.name for p in (copy / "pkg/scalers").glob("*_scaler.go")) == [
        "azure_queue_scaler.go",
        "mssql_scaler.go",
        "mysql_scaler.go",
        "postgresql_scaler.go",
    ]
    assert len(_cases(source / BUILDER)) > 60
    assert _cases(copy / BUILDER) == ["mssql", "mysql", "postgresql"]
    builder_outside_switch = re.compile(r"TRIGGERS-START.*TRIGGERS-END", re.DOTALL)
    assert builder_outside_switch.sub("", (copy / BUILDER).read_text()) == (
        builder_outside_switch.sub("", (source / BUILDER).read_text())
    )
    for folder in ("cmd/operator", "controllers/keda", "pkg/metricsservice", "pkg/scaling/cache"):
        same = filecmp.dircmp(source / folder, copy / folder)
        assert not (same.diff_files or same.left_only or same.right_only), folder


def test_a_keda_without_the_markers_or_a_kept_scaler_stops_the_build(tmp_path: Path) -> None:
    source = tmp_path / "keda"
    (source / "pkg/scalers").mkdir(parents=True)
    (source / BUILDER).parent.mkdir(parents=True)
    for name in ("postgresql", "mysql", "mssql", "azure_queue", "kafka"):
        (source / f"pkg/scalers/{name}_scaler.go").write_text("package scalers\n")

    (source / BUILDER).write_text("package scaling\n\tswitch triggerType {\n\t}\n")
    done = _trim(source, tmp_path / "no-markers")
    assert done.returncode != 0
    assert "no TRIGGERS-START/END markers" in done.stderr

    (source / BUILDER).write_text(
        "package scaling\n\t// TRIGGERS-START\n\tswitch triggerType {\n"
        '\tcase "kafka":\n\t\treturn nil, nil\n\tcase "postgresql":\n\t\treturn nil, nil\n'
        "\tdefault:\n\t\treturn nil, nil\n\t}\n\t// TRIGGERS-END\n}\n"
    )
    done = _trim(source, tmp_path / "no-mysql")
    assert done.returncode != 0
    assert "has no case for ['mssql', 'mysql']" in done.stderr

    (source / "pkg/scalers/mssql_scaler.go").unlink()
    done = _trim(source, tmp_path / "no-mssql-file")
    assert done.returncode != 0
    assert "has no ['mssql_scaler.go']" in done.stderr
