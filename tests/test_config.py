"""Config: TOML, then environment, then flags; every bad value exits 2 naming its field."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from smemd import paths
from smemd.config import ConfigError, load, parse_listen
from smemd.main import main, render_config
from tests.daemon_process import clean_env


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "smemd.toml"
    path.write_text(text)
    return path


def test_defaults_match_the_design(tmp_path: Path) -> None:
    config = load(write(tmp_path, ""), env={})
    assert config.api.listen == "127.0.0.1:8900"
    assert config.api.max_body_mb == 10
    assert config.fleet.kind == "builtin"
    assert config.engine.half_life_days == 0
    assert (config.ingest.allow_hosts, config.ingest.fetch_timeout_s) == ([], 60)
    assert config.ingest.max_fetch_mb == 20


def test_full_sketch_decodes(tmp_path: Path) -> None:
    config = load(
        write(
            tmp_path,
            """
[paths]
state-dir = "/var/lib/smem"
socket = "/run/smem/smemd.sock"
pause-file = "/run/smem/paused.json"
[api]
listen = "[::1]:8900"
token = "a"
admin-token = "b"
max-body-mb = 20
[fleet]
kind = "vca2"
[[fleet.nodes]]
id = "node0"
address = "172.31.1.1"
embed = 8080
rerank = 8081
llm = 8082
lanes = ["interactive", "background"]
lendable = false
card = 0
cpu = 0
[[fleet.nodes]]
id = "node3"
llm = 8082
[cards]
vcactl = "/usr/sbin/vcactl"
image-dir = "/var/lib/vca"
boot = ["node0"]
[engine]
half-life-days = 30
""",
        ),
        env={},
    )
    assert config.api.listen == "[::1]:8900" and parse_listen(config.api.listen) == ("::1", 8900)
    assert [n.id for n in config.fleet.nodes] == ["node0", "node3"]
    assert config.fleet.nodes[1].embed is None and config.fleet.nodes[1].lanes_in("hosts") == [
        "interactive"
    ]
    assert config.cards.boot == ["node0"]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[api]\nlisen = '1'\n", "$.api.lisen"),
        ("[api]\nmax-body-mb = 'big'\n", "$.api.max-body-mb"),
        ("[api]\nmax-body-mb = 0\n", "$.api.max-body-mb"),
        ("[api]\nlisten = 'localhost'\n", "$.api.listen"),
        ("[api]\nlisten = 'host:99999'\n", "$.api.listen"),
        ("[fleet]\nkind = 'gpu'\n", "$.fleet.kind"),
        ("[[fleet.nodes]]\nid = 'node0'\n[[fleet.nodes]]\nid = 'bad'\n", "$.fleet.nodes[1].id"),
        ("[[fleet.nodes]]\nid = 'node0'\nembed = 70000\n", "$.fleet.nodes[0].embed"),
        ("[[fleet.nodes]]\nid = 'node0'\nlanes = ['fast']\n", "$.fleet.nodes[0].lanes[0]"),
        ("[[fleet.nodes]]\nid = 'node0'\n[[fleet.nodes]]\nid = 'node0'\n", "$.fleet.nodes[1].id"),
        ("[cards]\nboot = 'some'\n", "$.cards.boot"),
        ("[daemon]\nlog-level = 'chatty'\n", "$.daemon.log-level"),
        ("[paths]\nsocket = '/" + "s" * 120 + "'\n", "$.paths.socket"),
        ("[surprise]\nx = 1\n", "$.surprise"),
        ("[ingest]\nallow-hosts = ['wiki.lan', 'http://x/']\n", "$.ingest.allow-hosts[1]"),
        ("[ingest]\nallow-hosts = ['x:99999']\n", "$.ingest.allow-hosts[0]"),
        ("[ingest]\nmax-fetch-mb = 0\n", "$.ingest.max-fetch-mb"),
        ("[ingest]\nfetch-timeout-s = 0\n", "$.ingest.fetch-timeout-s"),
        ("api = 3\n", "$.api"),
    ],
)
def test_bad_values_name_their_field(tmp_path: Path, text: str, path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(write(tmp_path, text), env={})
    assert str(caught.value).startswith(path + ":"), caught.value


def test_bad_toml_names_the_file_and_line(tmp_path: Path) -> None:
    file = write(tmp_path, "[api\nlisten = 1\n")
    with pytest.raises(ConfigError, match=r"smemd.toml: not valid TOML: .*line 1"):
        load(file, env={})


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "absent.toml", env={})


def test_env_overrides_file_and_flags_override_env(tmp_path: Path) -> None:
    file = write(tmp_path, "[api]\ntoken = 'from-file'\n[paths]\nstate-dir = '/from/file'\n")
    env = {"SMEM_TOKEN": "from-env", "SMEM_STATE_DIR": "/from/env", "SMEM_ADMIN_TOKEN": "adm"}
    config = load(file, env=env, overrides={("paths", "state-dir"): "/from/flag"})
    assert config.api.token == "from-env"
    assert config.api.admin_token == "adm"
    assert config.paths.state_dir == "/from/flag"
    assert config.paths.socket == (
        "/run/smem/smemd.sock" if paths.is_system() else "/from/flag/smemd.sock"
    )


def test_socket_and_pause_file_follow_the_runtime_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Non-root defaults; this machine may run tests as root, so ask for the user's view.
    monkeypatch.setattr(paths, "is_system", lambda: False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    config = load(write(tmp_path, ""), env={})
    assert config.paths.state_dir == str(tmp_path / "data" / "smem")
    assert config.paths.socket == str(tmp_path / "run" / "smem" / "smemd.sock")
    assert config.paths.pause_file == str(tmp_path / "run" / "smem" / "paused.json")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    config = load(write(tmp_path, ""), env={})
    assert config.paths.socket == str(tmp_path / "data" / "smem" / "smemd.sock")


def test_print_config_round_trips(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        '[api]\nlisten = "127.0.0.1:0"\n[fleet]\nkind = "hosts"\n'
        '[[fleet.nodes]]\nid = "node1"\naddress = "127.0.0.1"\nembed = 8080\n'
        '[engine]\nhalf-life-days = 7.5\n[cards]\nimage-dir = "/odd \\"dir\\"\\u007f"\n',
    )
    config = load(file, env={})
    printed = render_config(config)
    again = load(write(tmp_path, printed), env={})
    assert again == config
    assert tomllib.loads(printed)["fleet"]["nodes"][0]["id"] == "node1"


def test_print_config_masks_tokens(tmp_path: Path) -> None:
    printed = render_config(load(write(tmp_path, "[api]\ntoken = 'hunter2'\n"), env={}))
    assert "hunter2" not in printed and 'token = "********"' in printed


def run_smemd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smemd", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=30,
    )


def test_check_config_exits_0_on_good_and_2_on_bad(tmp_path: Path) -> None:
    good = run_smemd("--config", str(write(tmp_path, "[api]\nmax-body-mb = 5\n")), "--check-config")
    assert (good.returncode, good.stdout.strip()) == (0, "config ok")
    bad = run_smemd("--config", str(write(tmp_path, "[api]\nmax-body-mb = -5\n")), "--check-config")
    assert bad.returncode == 2
    assert "bad config: $.api.max-body-mb" in bad.stderr


def test_bad_flag_value_exits_2_naming_the_field() -> None:
    result = run_smemd("--config", os.devnull, "--listen", "nowhere", "--check-config")
    assert result.returncode == 2 and "$.api.listen" in result.stderr


def test_print_config_shows_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", os.devnull, "--listen", "127.0.0.1:0", "--print-config"]) == 0
    assert tomllib.loads(capsys.readouterr().out)["api"]["listen"] == "127.0.0.1:0"
