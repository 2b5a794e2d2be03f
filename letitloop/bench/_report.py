"""What ``lil bench`` prints: a Rich table, Markdown for a README, or the JSON itself.

One row per framework, over every scenario it ran: faults landed, acknowledged work lost, model
calls run again (and the most after one fault), the tokens run again per fault as a share of a
clean run's, duplicate side effects, the median time from restart to progress, how often a
person had to act (and what they were told), and runs that ended with the right answer. Below
it: every framework that dropped out and why, every fault kind skipped and why, and the seed.
"""

from __future__ import annotations

from typing import Any

from letitloop.bench._summary import framework_totals

COLUMNS = (
    "framework",
    "faults",
    "acked work lost",
    "calls again (max/fault)",
    "tokens again per fault",
    "duplicate effects",
    "restart → progress",
    "person acted",
    "right answer",
)


def rows(data: dict[str, Any]) -> list[list[str]]:
    """The table's cells, one row per framework that ran."""
    out = []
    for entry in data["frameworks"].values():
        t = framework_totals(entry)
        if t is None:
            continue
        rec = "-" if t["recovery_ms_median"] is None else _ms(t["recovery_ms_median"])
        out.append(
            [
                entry["title"],
                f"{t['kills']}",
                f"{t['lost']}",
                f"{t['rerun_calls']} ({t['max_rerun_per_kill']})",
                f"{t['tokens_pct_per_kill']:.1f} %",
                f"{t['duplicate_effects']}",
                rec,
                f"{t['person_acts']}",
                f"{t['right']}/{t['trials']}",
            ]
        )
    return out


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def notes(data: dict[str, Any]) -> list[str]:
    """The lines under the table: drop-outs, skipped faults, what people were told, the run."""
    lines = []
    for entry in data["frameworks"].values():
        if "skipped" in entry:
            lines.append(f"{entry['title']} did not run: {entry['skipped']}")
        for name, sc in entry.get("scenarios", {}).items():
            if "skipped" in sc:
                lines.append(f"{entry['title']} skipped {name}: {sc['skipped'][:300]}")
    for kind, why in data.get("skipped_faults", {}).items():
        lines.append(f"fault {kind} not injected: {why}")
    for entry in data["frameworks"].values():
        t = framework_totals(entry)
        if t and t["person_commands"]:
            told = sorted({_generic(c) for c in t["person_commands"]})
            lines.append(f"{entry['title']}: the person was told {'; '.join(told)}")
    m = data["meta"]
    lines.append(
        f"lil bench{' --quick' if m['quick'] else ''} --seed {m['seed']}: {m['date'][:10]}, "
        f"commit {m['commit']}, letitloop {m['letitloop']}, Python {m['python']}, {m['machine']}, "
        f"load {m['load'][0]:.1f} to {m.get('load_end', m['load'])[0]:.1f}, "
        f"{m['wall_s'] / 60:.1f} min"
    )
    return lines


def _generic(command: str) -> str:
    """A command with its run id and approval id left out (they differ in every trial)."""
    words = command.split()
    if words[:3] == ["lil", "effects", "resolve"] and len(words) >= 6:
        return f"`lil effects resolve RUN {words[4]} {words[5]}`"
    if words[:3] == ["lil", "approvals", "approve"]:
        return "`lil approvals approve ID`"
    return command if command.startswith("answer") else f"`{command}`"


def markdown(data: dict[str, Any]) -> str:
    """The table and its notes as Markdown (what docs/bench.md and the README hold)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(data)]
    lines.append("")
    lines += [f"- {n}" for n in notes(data)]
    return "\n".join(lines)


def scenario_markdown(data: dict[str, Any]) -> str:
    """One table per scenario (docs/bench.md), same columns."""
    names = list(data["meta"]["scenarios"])
    parts = []
    for name in names:
        parts.append(f"#### {name}: {data['meta']['scenarios'][name]['title']}\n")
        parts.append("| " + " | ".join(COLUMNS) + " |")
        parts.append("|" + "---|" * len(COLUMNS))
        for entry in data["frameworks"].values():
            sc = entry.get("scenarios", {}).get(name)
            if not sc or "totals" not in sc:
                continue
            t = sc["totals"]
            rec = "-" if t["recovery_ms_median"] is None else _ms(t["recovery_ms_median"])
            cells = [
                entry["title"],
                str(t["kills"]),
                str(t["lost"]),
                f"{t['rerun_calls']} ({t['max_rerun_per_kill']})",
                f"{t['tokens_pct_per_kill']:.1f} %",
                str(t["duplicate_effects"]),
                rec,
                str(t["person_acts"]),
                f"{t['right']}/{t['trials']}",
            ]
            parts.append("| " + " | ".join(cells) + " |")
        parts.append("")
    return "\n".join(parts)


def console(data: dict[str, Any]) -> None:
    """The table in the terminal (Rich), the notes under it."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Durability under faults (lil bench)", title_justify="left")
    for i, col in enumerate(COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right")
    for r in rows(data):
        table.add_row(*r)
    out = Console()
    out.print(table)
    for line in notes(data):
        out.print(f"  {line}", highlight=False, markup=False)
