"""Task files: the documented example loads, mistakes are errors naming file and key, presets
are invoked as their CLIs document, globs and Markdown rules behave as docs/tasks.md says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from letitloop.tasks import PRESETS, TaskFileError, TaskSpec, load_task
from letitloop.tasks._markdown import problems
from letitloop.tasks._tree import allowed

DOC = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def _toml_blocks() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.S)


def _project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "tasks").mkdir(exist_ok=True)
    (tmp_path / "tasks" / "t.toml").write_text(text)
    return tmp_path


def test_the_documented_task_file_loads(tmp_path: Path) -> None:
    full, agents = _toml_blocks()
    task = load_task(_project(tmp_path, full), "t")
    assert [a.name for a in task.agents] == ["claude", "codex", "gemini"]
    assert [c.kind for c in task.checks] == ["command", "python", "regex", "markdown"]
    assert task.limits.attempts == 4 and task.limits.cost_usd == 5.0
    assert task.protect == ("src/auth/api.py::login",)
    assert TaskSpec.from_dict(task.to_dict()) == task  # what the run journals round-trips
    body = full.split("agents =")[0] + agents + "\n[limits]" + full.split("[limits]")[1]
    custom = load_task(_project(tmp_path, body), "t").agents
    assert custom[1].command == ("./scripts/agent.sh", "{prompt}")
    assert custom[2].command == (*PRESETS["claude"].command, "--model", "opus")
    assert custom[2].stdin and custom[2].name == "claude-opus"


def test_presets_are_invoked_as_documented() -> None:
    assert PRESETS["claude"].command[:2] == ("claude", "-p") and PRESETS["claude"].stdin
    assert PRESETS["codex"].command[:2] == ("codex", "exec") and PRESETS["codex"].command[-1] == "-"
    assert PRESETS["gemini"].command[-2:] == ("-p", "{prompt}")
    assert PRESETS["aider"].command[-2:] == ("--message-file", "{prompt_file}")
    for name, agent in PRESETS.items():
        assert f"`{' '.join(agent.command[:2])}" in DOC.read_text(), name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('paths = ["src"]\nagents = ["claude"]', "give exactly one of goal"),
        ('goal = "x"\nagents = ["claude"]', "paths is empty"),
        ('goal = "x"\npaths = ["a"]\nagents = ["cursor"]', "no agent preset 'cursor'"),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude"]\ncolour = 1', "unknown key 'colour'"),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude"]\n[[checks]]\nkind = "lint"', "'lint'"),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude"]\n[limits]\nattempts = 0', "attempts"),
        ('goal = "x"\npaths = ["a"]\nagents = [{name = "m"}]', "exactly one of preset"),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude", "claude"]', "agent names repeat"),
        ('goal = "x"\npaths = ["a"]\nagents = ["claude"]\n[[checks]]\nkind = "regex"', "paths"),
        ("goal = ", "not valid TOML"),
    ],
)
def test_mistakes_name_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TaskFileError) as err:
        load_task(_project(tmp_path, text), "t")
    assert message in err.value.message and "t.toml" in err.value.message


def test_a_missing_task_file_says_where(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r"no task file .*nope\.toml"):
        load_task(tmp_path, "nope")


def test_globs() -> None:
    assert allowed("src/a/b.py", ("src/**",)) and allowed("src/a/b.py", ("src",))
    assert allowed("src/b.py", ("src/*.py",)) and not allowed("src/a/b.py", ("src/*.py",))
    assert allowed("x/docs/a.md", ("**/docs/*.md",)) and allowed("docs/a.md", ("**/docs/*.md",))
    assert not allowed("setup.cfg", ("src/**", "tests/test_x.py"))


def test_markdown_rules(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Part two\n")
    before = "# Title\n\n## Keep me\n"
    ok = (
        "---\ntitle: t\n---\n# Title\n\n## Keep me\n\nSee [x](other.md#part-two), "
        "[y](#keep-me) and [web](https://example.com).\n\n"
        "```md\n# not a heading [z](gone.md)\n```\n"
    )
    assert (
        problems("a.md", before, ok, tmp_path, ("headings", "front_matter", "links", "fences"))
        == []
    )
    bad = "---\n- a list\n---\n# Title\n\nSee [x](other.md#nope)\n~~~\n"
    found = problems("a.md", before, bad, tmp_path, ("headings", "front_matter", "links", "fences"))
    assert found == [
        "a.md: the code fence opened on line 7 is never closed",
        "a.md: the front matter is YAML but not a mapping of keys to values",
        "a.md: heading '## Keep me' (line 3 before) was removed",
        "a.md:6: link to 'other.md#nope': no heading #nope",
    ]
    assert problems("a.md", before, bad, tmp_path, ("links",)) == found[-1:]


def test_a_snapshot_sees_a_same_size_edit_made_right_after_the_last(tmp_path: Path) -> None:
    from letitloop.tasks import _tree

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref\n")
    first = _tree.snapshot(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")  # same size, within the same clock tick or so
    second = _tree.snapshot(tmp_path)
    assert list(first) == ["a.py"]  # .git is never the agent's work
    assert _tree.changed(first, second) == ["a.py"]
    assert "+x = 2" in _tree.diff(first, second, ["a.py"])
    assert _tree.restore(tmp_path, first, ["a.py"]) == []
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
