"""GraphDefs real TensorFlow serialized, one or more per op family, imported and run here.

tests/interop/programs/graph_sweep.py builds each case in TF's graph mode
(gradients by tf.gradients, so the *Grad ops TF emits come along), runs it and
writes the GraphDef and the values TF fetched; one TF process serves the whole
test session. Each test imports a family's GraphDefs with
`nbcluster.import_graph_def`, runs the same runs in an nbcluster Session and
compares dtype, shape and values (random ops: dtype and shape only, TF's
Philox streams not being ours), and where TF's run failed, the error class.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from tensorflow_processes import Tasks, requires_tensorflow, run_program

import nbcluster as tf
from nbcluster.proto import graph_pb2

pytestmark = requires_tensorflow

FAMILIES = ["array", "shapes", "fill", "slicing", "indexing", "logic", "math", "linalg",
            "reduction", "nn", "clipping", "embedding", "init_ops", "random", "state",
            "resource_variables", "training", "queue", "accumulator", "control",
            "tensor_array", "functional", "summary", "io", "data", "errors"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """{case: (manifest entry, GraphDef bytes, arrays)} for every case TF built."""
    out = tmp_path_factory.mktemp("graph_sweep")
    manifest = run_program("graph_sweep.py", str(out))
    return {name: (entry, (out / f"{name}.pb").read_bytes(),
                   dict(np.load(out / f"{name}.npz")))
            for name, entry in manifest.items()}


def test_every_family_has_cases(sweep):
    assert sorted({entry["family"] for entry, _, _ in sweep.values()}) == sorted(FAMILIES)


def run_case(graph_def_bytes: bytes, entry: dict, arrays: dict, target: str = "",
             devices: set | None = None) -> list:
    """Runs the case's runs in nbcluster; returns [(key, ours, TF's)] per fetched tensor.
    With `devices`, every run is traced and the devices that ran ops are added to it."""
    graph_def = graph_pb2.GraphDef.FromString(graph_def_bytes)
    pairs = []
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(target, graph=graph) as sess:
            for r, run in enumerate(entry["runs"]):
                feeds = {name: arrays[f"run{r}_feed{f}"] for f, name in enumerate(run["feeds"])}
                if run["error"]:  # TF's run failed: ours must fail with TF's error class
                    try:
                        sess.run(run["fetches"], feeds)
                        raised = None
                    except tf.errors.OpError as e:
                        raised = type(e).__name__
                    pairs.append((f"run{r} error", raised, run["error"]))
                    continue
                meta = tf.RunMetadata()
                options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) \
                    if devices is not None else None
                got = sess.run(run["fetches"], feeds, options=options, run_metadata=meta)
                if devices is not None:
                    devices.update(d.device for d in meta.step_stats.dev_stats)
                for f, value in enumerate(got):
                    key = f"run{r}_fetch{f}"
                    if key in arrays:
                        pairs.append((f"{key} {run['fetches'][f]}", value, arrays[key]))
    return pairs


def mismatches(pairs: list, entry: dict) -> list:
    wrong = []
    for key, ours, theirs in pairs:
        if key.endswith(" error"):
            if ours != theirs:
                wrong.append(f"{key}: ours {ours}, TF's {theirs}")
            continue
        ours = np.asarray(ours)
        if ours.dtype != theirs.dtype or ours.shape != theirs.shape:
            wrong.append(f"{key}: ours {ours.dtype}{list(ours.shape)}, "
                         f"TF's {theirs.dtype}{list(theirs.shape)}")
        elif entry["compare"] == "values" and not _close(ours, theirs, entry):
            wrong.append(f"{key}: ours {ours.tolist()}, TF's {theirs.tolist()}")
    return wrong


def _close(ours, theirs, entry) -> bool:
    if ours.dtype.kind in "fc":
        return np.allclose(ours, theirs, rtol=entry["rtol"], atol=entry["atol"],
                           equal_nan=True)
    return np.array_equal(ours, theirs)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_matches_tensorflow(sweep, family):
    failures = {}
    for name, (entry, graph_def, arrays) in sweep.items():
        if entry["family"] != family:
            continue
        try:
            wrong = mismatches(run_case(graph_def, entry, arrays), entry)
        except Exception as e:  # noqa: BLE001 - every case's failure is reported together
            wrong = [f"{type(e).__name__}: {e}"]
        if wrong:
            failures[name] = wrong
    assert not failures, json.dumps(failures, indent=1)[:6000]


def test_training_over_a_two_task_cluster(sweep):
    """One family over real gRPC: TF's Adam graph, variables on the ps, run by our worker."""
    entry, graph_def_bytes, arrays = sweep["training.adam_resource"]
    tasks = Tasks()
    try:
        spec = tasks.cluster({"ps": ["nbcluster"], "worker": ["nbcluster"]})
        graph_def = graph_pb2.GraphDef.FromString(graph_def_bytes)
        for node in graph_def.node:  # variables on the ps; ops colocated with them follow
            if node.op == "VarHandleOp":
                node.device = "/job:ps/task:0"
        devices: set = set()
        pairs = run_case(graph_def.SerializeToString(), entry, arrays,
                         target=f"grpc://{spec['worker'][0]}", devices=devices)
    finally:
        tasks.stop()
    assert {d.split("/device:")[0] for d in devices} == {
        "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}, devices
    assert pairs and not mismatches(pairs, entry)
