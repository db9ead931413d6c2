"""Unit tier: %%tfserver cluster bodies, --cluster values, job:task, the magic's command line."""
from __future__ import annotations

import json

import pytest

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.jupyter.arguments import (
    HelpShown,
    MagicUsageError,
    build_parser,
    parse_line,
    split_line,
)
from nbcluster.jupyter.cluster_body import (
    parse_cluster_body,
    parse_targets,
    parse_task,
    resolve_cluster,
    resolve_config,
)

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("body", ["ps: 1\nworker: 2\n", "# two workers\nps: 1\n\nworker: 2",
                                  '{"ps": 1, "worker": 2}', "  ps: 1\n  worker: 2\n",
                                  "ps: 1\nworker: 2\nchief: 0"])
def test_counts(body):
    request = parse_cluster_body(body)
    assert request.counts == {"ps": 1, "worker": 2} and request.spec is None


@pytest.mark.parametrize("body", [
    "ps: [localhost:2222]\nworker: [127.0.0.1:2223, 127.0.0.1:2224]",
    "ps:\n  - localhost:2222\nworker:\n  - 127.0.0.1:2223\n  - 127.0.0.1:2224",
    "ps: localhost:2222\nworker: 127.0.0.1:2223, 127.0.0.1:2224",
    json.dumps({"ps": ["localhost:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}),
])
def test_addresses(body):
    request = parse_cluster_body(body)
    assert request.counts is None
    assert request.spec == ClusterSpec({"ps": ["localhost:2222"],
                                        "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]})


def test_sparse_addresses():
    spec = parse_cluster_body('{"worker": {"1": "h:2224"}}').spec
    assert spec.task_indices("worker") == [1] and spec.task_address("worker", 1) == "h:2224"
    assert parse_cluster_body("worker: {1: 'h:2224'}").spec == spec


@pytest.mark.parametrize("body, words", [
    ("", ["empty"]),
    ("ps: [a", ["line 1: 'ps: [a'", "expected 'job: count' or 'job: [addresses]'"]),
    ('{"ps": 1,}', ["bad cluster JSON", "line 1"]),
    ("ps 1", ["line 1: 'ps 1': expected 'job: count' or 'job: [addresses]'"]),
    # the line the user wrote, not the one where YAML noticed ("mapping values ...")
    ("ps 1\nworker: 2", ["line 1: 'ps 1': expected 'job: count'"]),
    ("ps: 1\nworker 2", ["line 2: 'worker 2': expected 'job: count'"]),
    ("\n\nps:1", ["line 3: 'ps:1'"]),
    ("ps: 1\n  worker: 2", ["line 2: 'worker: 2' (indented"]),
    ("ps: 1\nworker: [h:1]", ["either a task count or its addresses", "'ps'", "'worker'"]),
    ("ps: -1", ["'ps'", "-1"]),
    ("ps: 1:30", ["'ps'", "1:30"]),          # YAML 1.1 would read 90
    ("ps: yes", ["'ps'", "yes"]),            # ... and True
    ("worker: 2.5", ["'worker'", "2.5"]),
    ("9ps: 1", ["bad job name", "9ps"]),
    ("ps: 1\nps: 2", ["'ps'", "twice"]),
    ('{"ps": 1, "ps": 2}', ["'ps'", "twice"]),
    ('{"ps": true}', ["'ps'", "True"]),
    ("worker:", ["'worker'", "None"]),
    ("ps: 0\nworker: 0", ["0 tasks"]),
    ("worker: [h:1, h:1x]", ["h:1x"]),
    ("[1, 2]", ["line 1: '[1, 2]': expected 'job: count'"]),
    ("- a\n- b", ["must map job names"]),
])
def test_bad_bodies(body, words):
    with pytest.raises(ValueError) as info:
        parse_cluster_body(body)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("text, task", [("worker:0", ("worker", 0)), ("ps:12", ("ps", 12)),
                                        ("/job:worker/task:3", ("worker", 3)),
                                        (" chief:1 ", ("chief", 1))])
def test_parse_task(text, task):
    assert parse_task(text) == task


@pytest.mark.parametrize("text", ["worker", "worker:", "worker:x", ":1", "worker:-1", "1:1"])
def test_parse_bad_task(text):
    with pytest.raises(ValueError, match="bad task .*expected job:task"):
        parse_task(text)


def test_resolve_cluster_forms(tmp_path):
    cluster = {"worker": ["localhost:2222", "localhost:2223"]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster))
    expected = ClusterSpec(cluster)
    user_ns = {"spec": ClusterSpec(cluster), "plain": cluster}
    assert resolve_cluster(json.dumps(cluster), user_ns) == expected
    assert resolve_cluster(str(path), user_ns) == expected
    assert resolve_cluster("spec", user_ns) == expected
    assert resolve_cluster("plain", user_ns) == expected
    with pytest.raises(ValueError, match="'nothing' is neither a variable"):
        resolve_cluster("nothing", user_ns)
    with pytest.raises(TypeError, match="variable 'n' holds a int"):
        resolve_cluster("n", {"n": 3})
    with pytest.raises(ValueError, match="malformed cluster JSON"):
        resolve_cluster('{"worker": [}', user_ns)


def test_resolve_config(tmp_path):
    import nbcluster as tf
    config = tf.ConfigProto(device_count={"CPU": 2})
    assert resolve_config(None, {}) is None
    assert resolve_config("c", {"c": config}) == config
    assert resolve_config('{"deviceCount": {"CPU": 2}}', {}) == config
    with pytest.raises(ValueError, match="malformed ConfigProto"):
        resolve_config('{"noSuchField": 1}', {})
    with pytest.raises(TypeError, match="variable 'c' holds a str"):
        resolve_config("c", {"c": "text"})


def test_parse_targets():
    known, unknown = parse_targets(["grpc://localhost:2222", "ps:0=grpc://h:1",
                                    '{"worker": {"2": "h:3"}}'])
    assert known == {("ps", 0): "h:1", ("worker", 2): "h:3"}
    assert unknown == ["localhost:2222"]
    with pytest.raises(ValueError, match="bad target 'nohost'"):
        parse_targets(["nohost"])


def test_split_line_keeps_json_whole():
    words = split_line('start --cluster {"worker": ["a:1", "b:2"]} --job worker')
    assert words == ["start", "--cluster", '{"worker": ["a:1", "b:2"]}', "--job", "worker"]
    assert split_line("logs demo 'worker:0'") == ["logs", "demo", "worker:0"]
    assert split_line('connect x {"a\\"}": ["h:1"]} y') == ["connect", "x",
                                                            '{"a\\"}": ["h:1"]}', "y"]
    assert split_line('start --cluster {"w": [} --job x') == ["start", "--cluster",
                                                               '{"w": [} --job x']
    with pytest.raises(MagicUsageError, match="closing quotation"):
        split_line('start --cluster "oops')


def test_parser_never_exits(capsys):
    parser = build_parser()
    with pytest.raises(HelpShown):
        parse_line(parser, "--help")
    assert "usage: %tfserver" in capsys.readouterr().out
    for line, words in [("", ["required", "COMMAND"]), ("nope", ["invalid choice", "'nope'"]),
                        ("logs demo", ["JOB:TASK"]), ("logs demo worker:0 --tail 0", ["> 0"]),
                        ("start --task one", ["--task", "'one'"])]:
        with pytest.raises(MagicUsageError) as info:
            parse_line(parser, line)
        for word in words:
            assert word in str(info.value)
