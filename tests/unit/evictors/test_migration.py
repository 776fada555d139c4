"""The PodMigrationJob evictor's pure parts: the job body, settings from flags and policies, the duplicate rule,
phase tracking, outcomes and the summary. The API side is in tests/integration/test_migration_jobs.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.errors import ConfigError
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.evictors.migration.evictor import MigrationEvictor
from kubectl_desched.evictors.migration.follow import Follower
from kubectl_desched.evictors.migration.jobs import (
    JobSettings,
    JobTrack,
    blocking_job,
    final_outcome,
    generate_name,
    job_body,
    job_detail,
    job_status,
    profile_settings,
)
from kubectl_desched.evictors.migration.text import phase_line, summary_rows
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.framework.policy_decoder import decode_policy
from kubectl_desched.kube import live
from kubectl_desched.kube.config import Connection
from kubectl_desched.model.durations import format_duration
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.plugins import full_registry
from tests import builders as b

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _candidate(name: str = "web-1", profile: str = "p", uid: str = "u-1") -> Candidate:
    pod = pod_from_json(b.pod(name, "n1", namespace="shop", uid=uid))
    return Candidate(pod, "LowNodeUtilization", "node over target: cpu 90% > 50%", profile)


def _job(name: str, pod: str, uid: str = "", phase: str | None = None, namespace: str = "shop") -> dict[str, Any]:
    job: dict[str, Any] = {"metadata": {"name": name},
                           "spec": {"podRef": {"namespace": namespace, "name": pod, "uid": uid}}}
    if phase is not None:
        job["status"] = {"phase": phase}
    return job


def test_job_body_is_what_koord_descheduler_writes_plus_our_labels() -> None:
    c = _candidate()
    body = job_body(c, JobSettings("EvictDirectly", 600, {"gracePeriodSeconds": 3}), "run1")
    assert body == {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {
            "generateName": "web-1-",
            "labels": {"app.kubernetes.io/managed-by": "kubectl-desched", "kubectl-desched/run": "run1"},
            "annotations": {"koordinator.sh/evict-reason": "node over target: cpu 90% > 50%",
                            "koordinator.sh/evict-trigger": "LowNodeUtilization"},
        },
        "spec": {"podRef": {"namespace": "shop", "name": "web-1", "uid": "u-1"}, "mode": "EvictDirectly",
                 "ttl": "10m0s", "deleteOptions": {"gracePeriodSeconds": 3}},
    }
    assert "deleteOptions" not in job_body(c, JobSettings(), "run1")["spec"]


def test_generate_name_keeps_the_generated_name_valid() -> None:
    assert generate_name("web-1") == "web-1-"
    long = "a" * 56 + ".b" + "c" * 100  # a DNS subdomain: a cut must not end in "." or "-"
    assert generate_name(long) == "a" * 56 + "-"
    assert len(generate_name("x" * 253)) == 58


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (300, "5m0s"), (90, "1m30s"), (3600, "1h0m0s"),
                                               (45, "45s"), (1.5, "1.5s"), (0.25, "250ms"), (86400, "24h0m0s"),
                                               (3661.5, "1h1m1.5s")])
def test_durations_print_as_go_does(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


KOORD = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration", "profiles": [
    {"name": "direct", "pluginConfig": [{"name": "MigrationController", "args": {
        "defaultJobMode": "EvictDirectly", "defaultJobTTL": "2m", "defaultDeleteOptions": {"gracePeriodSeconds": 7}}}]},
    {"name": "plain"},
]}


def test_settings_come_from_flags_then_the_policy_then_koordinators_defaults() -> None:
    policy = decode_policy(KOORD, full_registry(), "k.yaml")
    from_policy = profile_settings(policy.profiles, None, None)
    assert from_policy["direct"] == JobSettings("EvictDirectly", 120, {"gracePeriodSeconds": 7})
    assert from_policy["plain"] == JobSettings("ReservationFirst", 300, None)
    assert from_policy[""] == JobSettings("ReservationFirst", 300, None)
    flags = profile_settings(policy.profiles, "ReservationFirst", 0, grace_period=1)
    assert flags["direct"] == JobSettings("ReservationFirst", 0, {"gracePeriodSeconds": 1})
    assert flags["plain"].delete_options == {"gracePeriodSeconds": 1}
    assert flags["direct"].ttl == "0s"


@pytest.mark.parametrize("ttl", ["0.0000000001s", "0.4ns", "0.0000000000001"])
def test_a_ttl_written_as_0s_is_refused_on_the_command_line(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str], ttl: str) -> None:
    from tests.unit.kube.test_hostile_server import run_main

    code, out, err = run_main(monkeypatch, capsys, "balance", "--evictor", "migration", "--migration-ttl", ttl,
                              "--from-file", "-")
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"error: --migration-ttl: '{ttl}' would be written 0s, which means no "
                                "TTL; give 0 for none"]


def test_a_policy_ttl_written_as_0s_is_no_ttl_as_koordinator_reads_it() -> None:
    tiny = {**KOORD, "profiles": [{"name": "x", "pluginConfig": [
        {"name": "MigrationController", "args": {"defaultJobTTL": "0.0000000001s"}}]}]}
    settings = profile_settings(decode_policy(tiny, full_registry(), "k.yaml").profiles, None, None)["x"]
    assert (settings.ttl_seconds, settings.ttl, settings.ttl_text) == (0, "0s", "no TTL")
    assert JobSettings(ttl_seconds=1e-10) == JobSettings(ttl_seconds=0)
    assert JobSettings(ttl_seconds=1e-9).ttl_text == "ttl 1ns"
    seen: list[str] = []  # and it never passes its TTL
    ev = _evictor(on_phase=lambda t: seen.append(phase_line(t)))
    ev.tracks = {1: JobTrack(_candidate("a"), "a-1", settings, datetime.now(UTC) - timedelta(seconds=100),
                             phase="Running")}
    ev._note_overdue()
    assert seen == []


def test_policy_job_mode_and_ttl_are_validated_as_koordinator_does() -> None:
    bad = {**KOORD, "profiles": [{"name": "x", "pluginConfig": [
        {"name": "MigrationController", "args": {"defaultJobMode": "Teleport"}}]}]}
    with pytest.raises(ConfigError, match=r"pluginConfig\[0\]\.args\.defaultJobMode: must be ReservationFirst or "
                                          r"EvictDirectly, not 'Teleport'"):
        decode_policy(bad, full_registry(), "k.yaml")
    negative = {**KOORD, "profiles": [{"name": "x", "pluginConfig": [
        {"name": "MigrationController", "args": {"defaultJobTTL": -60}}]}]}
    with pytest.raises(ConfigError, match="defaultJobTTL: must be positive or zero"):
        decode_policy(negative, full_registry(), "k.yaml")
    ok = decode_policy(KOORD, full_registry(), "k.yaml")
    assert not ok.warnings  # defaultJobTTL and defaultDeleteOptions are known fields


def test_an_unfinished_job_blocks_by_uid_or_by_name() -> None:
    jobs = [_job("done", "web-1", "u-1", "Succeeded"), _job("failed", "web-1", "u-1", "Failed"),
            _job("aborted", "web-1", "u-1", "Aborted"), _job("other-ns", "web-1", "u-9", "Running", "elsewhere")]
    assert blocking_job(jobs, "shop", "web-1", "u-1") is None
    by_uid = _job("by-uid", "renamed", "u-1", "Running")
    assert blocking_job([*jobs, by_uid], "shop", "web-1", "u-1") is by_uid
    by_name = _job("by-name", "web-1", "u-old")  # no phase yet: Pending
    assert blocking_job([*jobs, by_name], "shop", "web-1", "u-1") is by_name
    assert job_status(by_name) == ("Pending", "", "")


def test_a_track_records_each_change_once_and_when_it_ended() -> None:
    t = JobTrack(_candidate(), "web-1-abcde", JobSettings(), T0)
    assert t.observe(_job("web-1-abcde", "web-1"), T0)
    assert not t.observe(_job("web-1-abcde", "web-1", phase="Pending"), T0)  # no phase is Pending
    running = _job("web-1-abcde", "web-1", phase="Running")
    assert t.observe(running, T0) and not t.observe(running, T0)
    running["status"]["reason"] = "Evicting"
    assert t.observe(running, T0)
    failed = {**running, "status": {"phase": "Failed", "reason": "ForbiddenMigratePod", "message": "no"}}
    end = T0 + timedelta(seconds=3)
    assert t.observe(failed, end) and t.final and t.ended == end
    assert t.history == ["Pending", "Running", "Running", "Failed"]
    assert phase_line(t) == "  shop/web-1: PodMigrationJob web-1-abcde Failed (ForbiddenMigratePod: no)"


@pytest.mark.parametrize(("phase", "reason", "interrupted", "outcome", "message"), [
    ("Succeeded", "", False, "succeeded", "PodMigrationJob j Succeeded (m)"),
    ("Failed", "Timeout", False, "failed", "PodMigrationJob j Failed (Timeout: m)"),
    ("Aborted", "", False, "aborted", "PodMigrationJob j Aborted (m)"),
    ("Running", "", False, "timed out", "PodMigrationJob j still Running at the timeout; Koordinator carries on"),
    ("Pending", "", True, "unfinished", "PodMigrationJob j still Pending when interrupted; Koordinator carries on"),
])
def test_final_outcomes(phase: str, reason: str, interrupted: bool, outcome: str, message: str) -> None:
    t = JobTrack(_candidate(), "j", JobSettings(), T0, phase=phase, reason=reason, message="m")
    if phase in ("Running", "Pending"):
        t.message = ""
    assert final_outcome(t, interrupted) == (outcome, message)
    t.deleted = True
    assert final_outcome(t, interrupted)[0] == "deleted"


def test_summary_rows_show_jobs_and_pods_that_got_none() -> None:
    with_job, skipped, slow = _candidate("a"), _candidate("b"), _candidate("c")
    tracks = {id(with_job): JobTrack(with_job, "a-x", JobSettings(), T0, phase="Succeeded", ended=T0),
              id(slow): JobTrack(slow, "c-x", JobSettings(), T0, phase="Running", reason="WaitForBoundPodReady")}
    results = [EvictionResult(with_job, "succeeded", "", T0, T0 + timedelta(seconds=75)),
               EvictionResult(skipped, "skipped", "PodMigrationJob z (Running) already exists for this pod"),
               EvictionResult(slow, "timed out", "", T0, T0 + timedelta(seconds=5))]
    assert summary_rows(results, tracks) == [
        ["shop", "a", "a-x", "Succeeded", "", "", "1m15s"],
        ["shop", "b", "-", "-", "skipped", "PodMigrationJob z (Running) already exists for this pod", "-"],
        ["shop", "c", "c-x", "Running (timed out)", "WaitForBoundPodReady", "", "5s"],
    ]
    assert [r.ok for r in results] == [True, False, False]
    assert EvictionResult(with_job, "would create", "").ok


def _evictor(**kw: Any) -> MigrationEvictor:
    return MigrationEvictor(None, {"": JobSettings()}, **kw)  # type: ignore[arg-type]  # no API calls below


def test_waiting_lasts_until_the_controller_has_decided_or_deleted_the_job() -> None:
    """The controller checks a TTL only on its next look at the job (after failed evictions up to 1000 s apart),
    and its scavenger (every minute) deletes jobs 5 minutes past their TTL, or 30 minutes old without one."""
    ev = _evictor()
    ev.tracks = {1: JobTrack(_candidate(), "a", JobSettings(ttl_seconds=300), T0),
                 2: JobTrack(_candidate(), "b", JobSettings(ttl_seconds=600), T0)}
    assert ev.wait_seconds() == 600 + 300 + 60 + 15
    ev.tracks[3] = JobTrack(_candidate(), "c", JobSettings(ttl_seconds=0), T0)
    assert ev.wait_seconds() == 1800 + 60 + 15
    assert _evictor(timeout=4).wait_seconds() == 4
    assert not _evictor(server_dry_run=True).wait  # a dry-run job does not exist


def test_watch_events_before_the_post_returns_and_deletions_are_applied() -> None:
    seen: list[str] = []
    ev = _evictor()
    ev.on_phase = lambda t: seen.append(phase_line(t).split(": ", 1)[1])
    a, b2 = _candidate("a", uid="ua"), _candidate("b", uid="ub")
    ev.apply_event("MODIFIED", _job("a-1", "a", "ua", "Running"))  # quicker than our POST's answer
    ev._register(JobTrack(a, "a-1", JobSettings(), T0), _job("a-1", "a", "ua"))
    ev._register(JobTrack(b2, "b-1", JobSettings(), T0), _job("b-1", "b", "ub"))
    assert seen == ["PodMigrationJob a-1 Pending", "PodMigrationJob a-1 Running", "PodMigrationJob b-1 Pending"]
    ev.apply_list([_job("a-1", "a", "ua", "Succeeded")], registered_before={"a-1", "b-1"})
    assert seen[-2:] == ["PodMigrationJob a-1 Succeeded", "PodMigrationJob b-1 deleted before it ended"]
    assert ev.open_jobs() == []
    ev.apply_event("DELETED", _job("a-1", "a", "ua", "Succeeded"))  # Koordinator's scavenger, later: no change
    assert len(seen) == 5
    results = [EvictionResult(a, "created", ""), EvictionResult(b2, "created", "")]
    final = ev.settle(results, threading.Event())
    assert [r.outcome for r in final] == ["succeeded", "deleted"]


def test_a_job_created_after_a_list_was_sent_is_not_taken_for_deleted() -> None:
    ev = _evictor()
    ev._register(JobTrack(_candidate("a"), "a-1", JobSettings(), T0), _job("a-1", "a"))
    ev.apply_list([], registered_before=set())
    assert [t.name for t in ev.open_jobs()] == ["a-1"]


@pytest.mark.parametrize("flag", [["--migration-mode", "EvictDirectly"], ["--migration-ttl", "1m"], ["--no-wait"]])
def test_migration_flags_need_the_migration_evictor(flag: list[str]) -> None:
    result = CliRunner().invoke(cli, ["balance", "--from-file", "x.yaml", *flag], standalone_mode=False)
    assert "only applies with --evictor migration" in str(result.exception)


def test_bad_migration_mode_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["balance", "--evictor", "migration", "--migration-mode", "Fast"])
    assert result.exit_code == 2 and "'Fast' is not one of 'ReservationFirst', 'EvictDirectly'" in result.output


@pytest.mark.parametrize("flag", ["--wait-ready", "--record-events"])
def test_eviction_pacing_flags_do_not_combine_with_the_migration_evictor(flag: str) -> None:
    result = CliRunner().invoke(cli, ["balance", "--evictor", "migration", flag], standalone_mode=False)
    assert f"{flag} does not apply with --evictor migration" in str(result.exception)


def _real_job(phase: str, status: str = "", conditions: list[dict[str, str]] | None = None,
              passed: bool = False) -> dict[str, Any]:
    job = _job("web-1-abcde", "web-1", "u-1", phase)
    job["status"].update({"status": status, "conditions": conditions or []})
    if passed:
        job["metadata"]["annotations"] = {"descheduler.koordinator.sh/passed-arbitration": "true"}
    return job


def test_live_lines_say_why_a_running_job_waits() -> None:
    """What the real controller writes: ReservationFirst stays Running while status.status says where it is; a job
    evicting or held by a PDB has only a condition; the arbitration marks the jobs it let through."""
    t = JobTrack(_candidate(), "web-1-abcde", JobSettings(), T0)
    assert t.observe(_real_job("Pending", passed=True), T0)
    assert phase_line(t) == "  shop/web-1: PodMigrationJob web-1-abcde Pending; passed arbitration"
    reserved = _real_job("Running", "ReservationCreated", [
        {"type": "ReservationCreated", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}], passed=True)
    assert t.observe(reserved, T0)
    assert phase_line(t) == ("  shop/web-1: PodMigrationJob web-1-abcde Running; status ReservationCreated; "
                             "condition ReservationCreated=True; passed arbitration")
    evicting = _real_job("Running", "ReservationCreated", [
        {"type": "ReservationCreated", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
        {"type": "Eviction", "status": "False", "reason": "Evicting", "lastTransitionTime": "2026-01-01T00:00:01Z"}],
        passed=True)
    assert t.observe(evicting, T0) and not t.observe(evicting, T0)
    assert "; condition Eviction=False Evicting;" in phase_line(t)  # same second: the later entry
    assert job_detail(_job("x", "y")) == ("", "", False)


def test_a_job_past_its_ttl_is_waited_for_and_said_so_once() -> None:
    seen: list[str] = []
    ev = _evictor(on_phase=lambda t: seen.append(phase_line(t)))
    started = datetime.now(UTC) - timedelta(seconds=100)
    late = JobTrack(_candidate("a"), "a-1", JobSettings(ttl_seconds=90), started, phase="Running")
    young = JobTrack(_candidate("b"), "b-1", JobSettings(ttl_seconds=300), started, phase="Running")
    ev.tracks = {1: late, 2: young}
    ev._note_overdue()
    ev._note_overdue()
    assert seen == ["  shop/a: PodMigrationJob a-1 Running; past its TTL 1m30s: Koordinator fails it on its next "
                    "look at the job (up to 1000 s apart after failed evictions) and deletes it 5m0s after the TTL"]


class _EndlessWatch:
    """The client's side of a watch whose server sends one event, then a line without end."""

    def param_serialize(self, method: str, path: str, **_kw: Any) -> tuple[Any, ...]:
        return method, path, {}, None, []

    def call_api(self, *_args: Any, **_kw: Any) -> Any:
        return SimpleNamespace(status=200, response=self)

    def stream(self, size: int, decode_content: bool) -> Iterator[bytes]:
        yield json.dumps({"type": "MODIFIED", "object": _job("a-1", "a", "ua", "Running")}).encode() + b"\n"
        while True:
            yield b"x" * size


def test_a_watch_line_without_end_is_read_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "ANSWER_LIMIT", 1 << 20)
    ev = _evictor()
    ev.conn = Connection(_EndlessWatch(), "https://x", "ctx", "shop")  # type: ignore[arg-type]
    seen: list[str] = []
    ev.apply_event = lambda kind, obj: seen.append(kind)  # type: ignore[method-assign]
    with pytest.raises(live.TooLarge, match=r"the answer to GET .*podmigrationjobs[?]watch=true is larger than the "
                                            "1 MiB one answer may have"):
        Follower(ev)._watch("1")
    assert seen == ["MODIFIED"]
