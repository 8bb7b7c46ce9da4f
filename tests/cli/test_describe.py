"""`streams-rt describe`: the topology as Kafka's TopologyDescription; bad references fail in one line."""

from __future__ import annotations

from tests.cli.helpers import assert_one_error_line, streams_rt
from tests.tasks import topologies


def test_describe_prints_the_topology_description() -> None:
    result = streams_rt("describe", "tests.tasks.topologies:word_count", "--arg", "suffix=-x")
    assert result.returncode == 0, result.stderr
    assert result.stdout == topologies.word_count("-x").describe().rstrip("\n") + "\n"
    assert "Sub-topology: 1" in result.stdout and "(topics: [wc-lines-x])" in result.stdout


def test_help() -> None:
    result = streams_rt("describe", "--help")
    assert result.returncode == 0 and "MODULE:ATTR" in result.stdout and "--arg NAME=VALUE" in result.stdout


def test_bad_references_fail_in_one_line() -> None:
    assert_one_error_line(streams_rt("describe", "no_such_module_here:t"), "cannot import the topology",
                          "no_such_module_here")
    assert_one_error_line(streams_rt("describe", "tests.tasks.topologies:nothing"), "nothing")
    assert_one_error_line(streams_rt("describe", "tests.tasks.topologies"), "a topology reference is 'module:attr'")
    assert_one_error_line(streams_rt("describe", "tests.tasks.topologies:S"), "is not a Topology")
    assert_one_error_line(streams_rt("describe", "tests.tasks.topologies:word_count", "--arg", "suffix"),
                          "expected NAME=VALUE")
    assert_one_error_line(streams_rt("describe", "tests.tasks.topologies:word_count", "--arg", "nope=1"),
                          "unexpected keyword argument")
