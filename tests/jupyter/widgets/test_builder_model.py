"""Unit tier: the builder's design -> Cluster call, `%%tfserver cluster` cell, Python code."""
from __future__ import annotations

import pytest

from nbcluster.jupyter.arguments import build_parser, parse_line
from nbcluster.jupyter.cluster_body import parse_cluster_body
from nbcluster.jupyter.widgets import builder_model as model
from nbcluster.jupyter.widgets import builder_text

pytestmark = pytest.mark.timeout(30)


def _design(*jobs, launcher="local") -> model.Design:
    return model.Design([model.new_job(*job[:2], **(job[2] if len(job) > 2 else {}))
                         for job in jobs], launcher)


def test_default_design_is_ps_1_worker_2_local():
    design = model.default_design()
    assert [(j.name, j.tasks, j.hosts) for j in design.jobs] == [
        ("ps", 1, ["local"]), ("worker", 2, ["local", "local"])]
    assert model.cluster_spec(design) == {"ps": ["127.0.0.1:0"],
                                          "worker": ["127.0.0.1:0", "127.0.0.1:0"]}
    assert model.cluster_call(design) == ("local", (), {"jobs": {"ps": 1, "worker": 2}})
    assert builder_text.cell_text(design, "demo") == "%%tfserver cluster demo\nps: 1\nworker: 2\n"
    assert builder_text.python_code(design, "demo").splitlines()[-1] == \
        "demo = Cluster.local(jobs={'ps': 1, 'worker': 2})"


def test_devices_compact_to_one_value_per_job_or_a_list_per_task():
    design = _design(("ps", 1, {"gpus": "none"}),
                     ("worker", 2, {"cpus": [2, 3], "gpus": "0"}), ("chief", 1))
    assert model.devices(design) == {"ps": {"gpus": "none"},
                                     "worker": {"cpus": [2, 3], "gpus": "0"}}
    method, args, kwargs = model.cluster_call(design)
    assert method == "local" and kwargs["devices"] == model.devices(design)
    request = parse_cluster_body(builder_text.cell_text(design).split("\n", 1)[1])
    assert request.counts == {"ps": 1, "worker": 2, "chief": 1}
    assert request.devices == model.devices(design)


def test_explicit_hosts_give_addresses_and_from_spec():
    design = _design(("ps", 1, {"hosts": "local:2222"}), ("worker", 2))
    method, args, kwargs = model.cluster_call(design)
    assert (method, args) == ("from_spec", ({"ps": ["127.0.0.1:2222"], "worker": [
        "127.0.0.1:0", "127.0.0.1:0"]}, "local"))
    request = parse_cluster_body(builder_text.cell_text(design).split("\n", 1)[1])
    assert request.spec.as_dict() == args[0]


def test_ssh_design_gives_the_magic_options_and_the_same_spec():
    design = _design(("ps", 1, {"hosts": "h1"}), ("worker", 2, {"hosts": ["h2:2300", "[::1]"],
                                                                "cpus": 2}), launcher="ssh")
    design.ssh = model.SSHOptions(user="me", key="/keys/my key", port=2022, python="/opt/py",
                                  options=["StrictHostKeyChecking=no"])
    method, args, kwargs = model.cluster_call(design)
    assert args == ({"ps": ["h1:0"], "worker": ["h2:2300", "[::1]:0"]}, "ssh")
    assert kwargs == {"devices": {"worker": {"cpus": 2}}, "user": "me", "key": "/keys/my key",
                      "port": 2022, "python": "/opt/py",
                      "ssh_options": ("-o", "StrictHostKeyChecking=no")}
    line, body = builder_text.cell_text(design, "far").split("\n", 1)
    args_ = parse_line(build_parser(), line[len("%%tfserver "):])
    assert (args_.name, args_.ssh, args_.user, args_.key, args_.ssh_port, args_.python,
            args_.ssh_option) == ("far", "", "me", "/keys/my key", 2022, "/opt/py",
                                  ["StrictHostKeyChecking=no"])
    request = parse_cluster_body(body)
    assert request.spec.as_dict() == args[0] and request.devices == {"worker": {"cpus": 2}}
    code = builder_text.python_code(design, "far")
    namespace: dict = {}
    exec(code.replace("Cluster.from_spec(", "(lambda *a, **k: (a, k))("), namespace)
    assert namespace["far"] == (args, kwargs)


@pytest.mark.parametrize("change, words", [
    (lambda d: setattr(d.jobs[0], "name", "my job"), "bad job name 'my job'"),
    (lambda d: setattr(d.jobs[1], "name", "ps"), "job 'ps' is given twice"),
    (lambda d: d.jobs.append(model.JobDesign("empty", [], [], [])), "job 'empty' has 0 tasks"),
    (lambda d: d.jobs.clear(), "the cluster has no job"),
    (lambda d: d.jobs[1].hosts.__setitem__(1, "a b"), "/job:worker/task:1: bad host 'a b'"),
    (lambda d: d.jobs[1].hosts.__setitem__(0, "h:99999"), "bad host 'h:99999'"),
    (lambda d: d.jobs[0].cpus.__setitem__(0, 0), "the CPU count must be a whole number >= 1, "
                                                 "not 0"),
    (lambda d: d.jobs[1].gpus.__setitem__(1, "gpu0"), "bad GPU list 'gpu0'"),
    (lambda d: setattr(d, "launcher", "ssh"), "host 'local' with the SSH launcher"),
    (lambda d: setattr(d, "launcher", "k8s"), "bad launcher 'k8s'"),
    (lambda d: [j.hosts.__setitem__(0, "127.0.0.1:2222") for j in d.jobs],
     "both at 127.0.0.1:2222"),
])
def test_a_bad_design_is_refused_naming_the_value(change, words):
    design = model.default_design()
    change(design)
    with pytest.raises(ValueError) as info:
        builder_text.cell_text(design)
    assert words in str(info.value)


def test_bad_ssh_options_are_named():
    design = _design(("worker", 1, {"hosts": "h1"}), launcher="ssh")
    design.ssh.port = 0
    with pytest.raises(ValueError, match="bad ssh port 0"):
        model.validate(design)
    design.ssh.port, design.ssh.options = 22, ["-v"]
    with pytest.raises(ValueError, match="bad ssh option '-v'"):
        model.validate(design)


def test_new_job_checks_types_and_list_lengths():
    with pytest.raises(TypeError, match="task count must be an int, not '2'"):
        model.new_job("worker", "2")
    with pytest.raises(ValueError, match=r"hosts \['a', 'b'\] has 2 entries for 3 tasks"):
        model.new_job("worker", 3, hosts=["a", "b"])
    with pytest.raises(TypeError, match="a job name must be a string, not 3"):
        model.new_job(3)


def test_resize_keeps_settings_and_copies_the_last_task():
    job = model.new_job("worker", 2, hosts=["a", "b"], gpus=["0", "1"])
    job.resize(3)
    assert (job.hosts, job.gpus) == (["a", "b", "b"], ["0", "1", "1"])
    job.resize(1)
    assert (job.hosts, job.cpus, job.gpus) == (["a"], [None], ["0"])
    for bad in (-1, 0):  # a job of no task is removed, not kept empty
        with pytest.raises(ValueError, match=f">= 1 .*not {bad}"):
            job.resize(bad)
    assert job.hosts == ["a"]
    with pytest.raises(ValueError, match="task count must be >= 1, not 0"):
        model.new_job("worker", 0)


@pytest.mark.parametrize("text, cpus", [("", None), ("  ", None), ("1", 1), (" 2 ", 2)])
def test_parse_cpus(text, cpus):
    assert model.parse_cpus("worker", 1, text) == cpus


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "two"])
def test_parse_cpus_names_the_task_and_the_text(text):
    with pytest.raises(ValueError, match=f"/job:worker/task:1: CPUs must be .*not '{text}'"):
        model.parse_cpus("worker", 1, text)


def test_design_job_lookup_names_the_jobs_there_are():
    with pytest.raises(ValueError, match="no job 'chief' in the design \\(jobs: ps, worker\\)"):
        model.default_design().job("chief")


def test_environment_variables_go_to_the_cell_and_the_code():
    design = model.default_design()
    design.env = model.parse_env("PYTHONPATH=/opt/a:/opt/b, OMP_NUM_THREADS=1,2")
    assert design.env == {"PYTHONPATH": "/opt/a:/opt/b", "OMP_NUM_THREADS": "1,2"}
    line = builder_text.cell_text(design).splitlines()[0]
    args = parse_line(build_parser(), line[len("%%tfserver "):])
    assert args.env == ["PYTHONPATH=/opt/a:/opt/b", "OMP_NUM_THREADS=1,2"]
    assert model.cluster_call(design)[2]["env"] == design.env
    with pytest.raises(ValueError, match="bad environment variable 'no value'"):
        model.parse_env("no value")
    design.env = {"1X": "a"}
    with pytest.raises(ValueError, match="bad environment variable '1X'='a'"):
        model.validate(design)


def test_the_text_and_html_fallbacks_list_every_task():
    design = _design(("ps", 1, {"gpus": "none"}), ("worker", 2, {"cpus": [None, 2]}))
    text = builder_text.design_text(design, "not launched", "CELL")
    assert text.splitlines()[:4] == [
        "ClusterBuilder (local launcher, not launched)",
        "  ps:0  host=local  cpus=default  gpus=none",
        "  worker:0  host=local  cpus=default  gpus=not set",
        "  worker:1  host=local  cpus=2  gpus=not set"]
    assert text.endswith("\n\nCELL")
    page = builder_text.design_html(design, "x", "<cell>", "root")
    assert page.count("<tr>") == 4 and "&lt;cell&gt;" in page and 'class="root"' in page


def test_a_job_to_add_is_checked_against_the_design_and_its_launcher():
    design = model.default_design()
    job = model.job_to_add(design, "chief", 2, cpus=[1, 2])
    assert (job.name, job.tasks, job.cpus) == ("chief", 2, [1, 2])
    assert [j.name for j in design.jobs] == ["ps", "worker"]  # not added: the builder adds
    with pytest.raises(ValueError, match="job 'worker' is already in the design"):
        model.job_to_add(design, "worker")
    with pytest.raises(TypeError, match="the task count must be an int, not '2'"):
        model.job_to_add(design, "chief", "2")
    design.launcher = "ssh"
    with pytest.raises(ValueError, match="host 'local' with the SSH launcher"):
        model.job_to_add(design, "chief")


def test_the_next_job_name_is_the_first_one_free():
    design = model.default_design()
    assert model.next_job_name(design) == "job1"
    design.jobs += [model.new_job("job1"), model.new_job("job3")]
    assert model.next_job_name(design) == "job2"
