"""The judge's commands: `dreaming` (show or switch it), `judgements` (the judge's log), `label`
(a person's word on a type, a call or a link) and `calibration` (per-judge thresholds, and a fit),
thin callers of smemd's `/v1/dreaming`, `/v1/judgements`, `/v1/labels` and `/v1/calibration`."""

from __future__ import annotations

import argparse
from typing import TextIO, get_args
from urllib.parse import urlencode

from smemctl.client import Client
from smemctl.common import echo, fitted, when
from smemctl.table import pairs, table
from smemd.protocol import Dreaming
from smemd.protocol.calibration import (
    Calibration,
    DreamingChange,
    FitReply,
    JudgeCalibration,
    JudgeKind,
    Judgements,
    LabelReply,
    LabelRequest,
    LinkRef,
    MemoryType,
)

KINDS = get_args(JudgeKind)
TYPES = get_args(MemoryType)
VERDICTS = ("right", "wrong")

# --- dreaming ---------------------------------------------------------------------------------


def dreaming_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "switch", nargs="?", choices=("on", "off"), metavar="on|off", help="switch dreaming"
    )


def dreaming(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.switch is None:
        reply, raw = client.get("/v1/dreaming", Dreaming)
    else:
        change = DreamingChange(enabled=args.switch == "on")
        reply, raw = client.post("/v1/dreaming", change, Dreaming)
    if args.json:
        echo(raw, out)
        return
    last = f" (last: {reply.last_error})" if reply.last_error else ""
    rows = [
        ("enabled", _yes(reply.enabled)),
        ("state", reply.state),
        ("quiet", f"for {reply.quiet_for_s:.1f} s, dreams after {reply.quiet_after_s:g} s"),
        ("backlog", f"{reply.untyped} untyped, {reply.unlinked} unlinked"),
        ("typed", f"{reply.typed} of {reply.typing_asked} asked"),
        ("linked", f"{reply.linked} of {reply.links_looked} looked at"),
        ("last step", when(reply.last_step_at)),
        ("errors", f"{reply.errors}{last}"),
        ("heuristics", ", ".join(reply.heuristics) or "none"),
    ]
    print(pairs(rows), file=out)


# --- the judge's log --------------------------------------------------------------------------


def judgements_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=KINDS, help="one judge's calls")
    parser.add_argument("--after", type=int, default=0, metavar="N", help="calls after seq N")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (1..1000)")


def judgements(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    query: dict[str, object] = {"after": args.after, "limit": args.limit}
    if args.kind is not None:
        query["kind"] = args.kind
    reply, raw = client.get(f"/v1/judgements?{urlencode(query)}", Judgements)
    if args.json:
        echo(raw, out)
        return
    if not reply.judgements:
        print("no judgements", file=out)
        return
    rows = [
        (j.id, j.kind, f"{max(j.probabilities, default=0.0):.3f}", _yes(j.decided), j.applied,
         j.text, j.label or "-")
        for j in reply.judgements
    ]  # fmt: skip
    header = ("id", "kind", "p", "decided", "applied", "text", "label")
    print(fitted(rows, header, 5, out), file=out)
    if reply.next_after is not None:
        print(f"more: --after {reply.next_after}", file=out)


# --- labels -----------------------------------------------------------------------------------


def label_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    kind = what.add_parser("type", help="a memory's true type")
    kind.add_argument("memory_id", metavar="MEMORY_ID")
    kind.add_argument("type", choices=TYPES, metavar="TYPE", help=", ".join(TYPES))
    for verdict in VERDICTS:
        call = what.add_parser(verdict, help=f"a judge call was {verdict}")
        call.add_argument("judgement_id", metavar="JUDGEMENT_ID")
    link = what.add_parser("link", help="a proposed link (FROM extends TO) is right or wrong")
    link.add_argument("from_id", metavar="FROM_ID")
    link.add_argument("to_id", metavar="TO_ID")
    link.add_argument("verdict", choices=VERDICTS, metavar="right|wrong")


def label(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.what == "type":
        body = LabelRequest(memory_id=args.memory_id, type=args.type)
    elif args.what == "link":
        link = LinkRef(from_id=args.from_id, to_id=args.to_id)
        body = LabelRequest(link=link, correct=args.verdict == "right")
    else:
        body = LabelRequest(judgement_id=args.judgement_id, correct=args.what == "right")
    reply, raw = client.post("/v1/labels", body, LabelReply)
    if args.json:
        echo(raw, out)
        return
    print(f"labelled {reply.kind} {reply.subject_id}: {reply.value}", file=out)


# --- calibration ------------------------------------------------------------------------------


def calibration_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fit", action="store_true", help="fit thresholds to the labels first (--json: the fit)"
    )


def calibration(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.fit:
        fit, raw = client.post("/v1/calibration/fit", None, FitReply)
        if args.json:
            echo(raw, out)
            return
        print(_fit_table(fit), file=out)
        print(file=out)
    reply, raw = client.get("/v1/calibration", Calibration)
    if args.json:
        echo(raw, out)
        return
    header = ("kind", "threshold", "default", "labels", "decided", "correct", "accuracy",
              "coverage", "fitted at")  # fmt: skip
    print(table([_judge_row(j) for j in reply.judges], header=header), file=out)
    if reply.heuristics:
        print("no model: nothing is judged; labels still set types", file=out)


def _fit_table(fit: FitReply) -> str:
    rows = [
        (r.kind, f"{r.before:.3f} -> {r.after:.3f}", r.labels, r.outcome, r.reapplied, r.review)
        for r in fit.results
    ]
    return table(rows, header=("kind", "threshold", "labels", "outcome", "reapplied", "review"))


def _judge_row(j: JudgeCalibration) -> tuple[object, ...]:
    return (
        j.kind, f"{j.threshold:.3f}", f"{j.default_threshold:.3f}", j.labels, j.decided, j.correct,
        _share(j.accuracy), _share(j.coverage), when(j.fitted.fitted_at if j.fitted else None),
    )  # fmt: skip


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
