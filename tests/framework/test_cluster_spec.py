"""Unit tests for nbcluster.framework.cluster_spec: ClusterSpec and addresses."""
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from nbcluster.errors import InvalidArgumentError
from nbcluster.framework.cluster_spec import ClusterSpec, join_address, parse_address
from nbcluster.proto.config_pb2 import ClusterDef

pytestmark = pytest.mark.timeout(30)

DENSE = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


def _foreign_message_class(full_name, fields):
    """A message class from its own descriptor pool, standing in for TF's protos."""
    package, name = full_name.rsplit(".", 1)
    fdp = descriptor_pb2.FileDescriptorProto(name="foreign_%s.proto" % name,
                                             package=package, syntax="proto3")
    entry = fdp.message_type.add(name="JobDef")
    entry.field.add(name="name", number=1, type=9, label=1)
    tasks_entry = entry.nested_type.add(name="TasksEntry")
    tasks_entry.options.map_entry = True
    tasks_entry.field.add(name="key", number=1, type=5, label=1)
    tasks_entry.field.add(name="value", number=2, type=9, label=1)
    entry.field.add(name="tasks", number=2, type=11, label=3,
                    type_name=".%s.JobDef.TasksEntry" % package)
    msg = fdp.message_type.add(name=name)
    for field_name, number, type_, label, type_name in fields:
        msg.field.add(name=field_name, number=number, type=type_, label=label,
                      type_name=type_name % package if type_name else None)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def test_dense_dict():
    spec = ClusterSpec(DENSE)
    assert spec.jobs == ["ps", "worker"]
    assert spec.as_dict() == DENSE
    assert spec.num_tasks("worker") == 3
    assert spec.task_indices("worker") == [0, 1, 2]
    assert spec.task_address("ps", 1) == "ps1:2222"
    assert spec.job_tasks("worker") == DENSE["worker"]
    assert bool(spec)


def test_tuple_tasks_and_bytes():
    spec = ClusterSpec({b"ps": (b"ps0:2222",)})
    assert spec.as_dict() == {"ps": ["ps0:2222"]}


def test_sparse_dict():
    spec = ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["ps0:2222"]})
    assert spec.as_dict() == {"ps": ["ps0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}}
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [1, 3]
    assert spec.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert spec.task_address("worker", 3) == "w3:2222"


def test_dict_jobs_that_are_dense_come_back_as_lists():
    spec = ClusterSpec({"worker": {1: "w1:2222", 0: "w0:2222"}})
    assert spec.as_dict() == {"worker": ["w0:2222", "w1:2222"]}


def test_json_string_keys():
    spec = ClusterSpec({"worker": {"0": "w0:2222", "2": "w2:2222"}})
    assert spec.task_indices("worker") == [0, 2]
    assert spec.as_dict() == {"worker": {0: "w0:2222", 2: "w2:2222"}}


def test_empty_job_and_empty_spec():
    spec = ClusterSpec({"ps": [], "worker": {}})
    assert spec.as_dict() == {"ps": {}, "worker": {}}
    assert spec.num_tasks("ps") == 0
    assert spec.task_indices("ps") == []
    assert spec.job_tasks("ps") == []
    assert bool(spec)
    empty = ClusterSpec({})
    assert not empty and empty.jobs == [] and empty.as_dict() == {}
    assert repr(empty) == "ClusterSpec({})"
    assert len(empty.as_cluster_def().job) == 0


def test_repr_matches_tf():
    spec = ClusterSpec({"worker": ["localhost:2223", "localhost:2224"], "ps": ["localhost:2222"]})
    assert repr(spec) == ("ClusterSpec({'ps': ['localhost:2222'], "
                          "'worker': ['localhost:2223', 'localhost:2224']})")
    sparse = ClusterSpec({"worker": {2: "h:1"}, "ps": []})
    assert repr(sparse) == "ClusterSpec({'ps': {}, 'worker': {2: 'h:1'}})"


def test_as_cluster_def_sorted_and_round_trips():
    spec = ClusterSpec({"worker": {3: "w3:1", 1: "w1:1"}, "chief": ["c:1"], "ps": ["p0:1"]})
    cluster_def = spec.as_cluster_def()
    assert isinstance(cluster_def, ClusterDef)
    assert [job.name for job in cluster_def.job] == ["chief", "ps", "worker"]
    assert dict(cluster_def.job[2].tasks) == {1: "w1:1", 3: "w3:1"}
    assert ClusterSpec(cluster_def) == spec
    assert ClusterSpec(cluster_def).as_dict() == spec.as_dict()
    # A fresh proto each call: mutating it leaves the spec alone.
    cluster_def.job.add(name="extra")
    assert "extra" not in spec.jobs
    assert spec.as_cluster_def().SerializeToString() == spec.as_cluster_def().SerializeToString()


def test_from_cluster_def_proto():
    cluster_def = ClusterDef()
    job = cluster_def.job.add(name="worker")
    job.tasks[0] = "a:1"
    job.tasks[5] = "b:1"
    spec = ClusterSpec(cluster_def)
    assert spec.as_dict() == {"worker": {0: "a:1", 5: "b:1"}}


def test_from_cluster_spec_copies():
    spec = ClusterSpec(DENSE)
    copy = ClusterSpec(spec)
    assert copy == spec and copy is not spec
    assert copy.as_dict() == DENSE


def test_from_foreign_cluster_def():
    tf_cluster_def_cls = _foreign_message_class(
        "tensorflow.ClusterDef", [("job", 1, 11, 3, ".%s.JobDef")])
    foreign = tf_cluster_def_cls()
    job = foreign.job.add(name="ps")
    job.tasks[0] = "ps0:2222"
    spec = ClusterSpec(foreign)
    assert spec.as_dict() == {"ps": ["ps0:2222"]}


def test_foreign_message_of_another_type_is_refused():
    server_def_cls = _foreign_message_class(
        "tensorflow.ServerDef", [("job_name", 2, 9, 1, None)])
    with pytest.raises(TypeError, match="ServerDef"):
        ClusterSpec(server_def_cls(job_name="worker"))


def test_serializable_object_with_garbage_bytes():
    class Garbage:
        def SerializeToString(self):
            return b"\x0a\xff\xff"

    with pytest.raises(TypeError, match="Garbage"):
        ClusterSpec(Garbage())


def test_equality_like_tf():
    a = ClusterSpec(DENSE)
    assert a == ClusterSpec(dict(DENSE))
    assert not a != ClusterSpec(dict(DENSE))
    assert a != ClusterSpec({"ps": ["ps0:2222"]})
    # TF compares a dict against its internal {job: {index: address}} form.
    assert ClusterSpec({"ps": ["a:1"]}) == {"ps": {0: "a:1"}}
    assert ClusterSpec({"ps": ["a:1"]}) != {"ps": ["a:1"]}
    assert ClusterSpec({"ps": ["a:1"]}) != "ps"
    with pytest.raises(TypeError):
        hash(a)


def test_unknown_job_and_task():
    spec = ClusterSpec(DENSE)
    for call in (spec.num_tasks, spec.task_indices, spec.job_tasks):
        with pytest.raises(ValueError, match="'chief'"):
            call("chief")
    with pytest.raises(ValueError, match="'chief'"):
        spec.task_address("chief", 0)
    with pytest.raises(ValueError, match="index 7 in job 'ps'"):
        spec.task_address("ps", 7)
    with pytest.raises(ValueError, match=r"index \[0\]"):
        spec.task_address("ps", [0])
    with pytest.raises(ValueError, match=r"\['ps'\]"):
        spec.num_tasks(["ps"])


@pytest.mark.parametrize("cluster,error,named", [
    (None, TypeError, "None"),
    ("ps:2222", TypeError, "ps:2222"),
    (["localhost:2222"], TypeError, "localhost:2222"),
    ({1: ["a:1"]}, TypeError, "1"),
    ({None: ["a:1"]}, TypeError, "None"),
    ({"": ["a:1"]}, ValueError, "''"),
    ({"my-job": ["a:1"]}, ValueError, "my-job"),
    ({"ps": "localhost:2222"}, TypeError, "localhost:2222"),
    ({"ps": None}, TypeError, "'ps'"),
    ({"ps": {"localhost:2222"}}, TypeError, "'ps'"),
    ({"ps": [2222]}, TypeError, "2222"),
    ({"ps": ["a:1", None]}, TypeError, "None"),
    ({"ps": {0: 5}}, TypeError, "5"),
    ({"ps": {"x": "a:1"}}, ValueError, "'x'"),
    ({"ps": {1.5: "a:1"}}, TypeError, "1.5"),
    ({"ps": {None: "a:1"}}, TypeError, "None"),
    ({"ps": {True: "a:1"}}, TypeError, "True"),
    ({"ps": {-1: "a:1"}}, ValueError, "-1"),
    ({"ps": {"-2": "a:1"}}, ValueError, "-2"),
    ({"ps": {2**31: "a:1"}}, ValueError, str(2**31)),
    ({"ps": {0: "a:1", "0": "b:1"}}, ValueError, "0"),
    ({"ps": [], b"ps": []}, ValueError, "'ps'"),
])
def test_bad_input(cluster, error, named):
    with pytest.raises(error) as info:
        ClusterSpec(cluster)
    assert named in str(info.value)


def test_bad_cluster_def_content():
    cluster_def = ClusterDef()
    cluster_def.job.add(name="ps").tasks[0] = "a:1"
    cluster_def.job.add(name="ps").tasks[0] = "b:1"
    with pytest.raises(ValueError, match="'ps'"):
        ClusterSpec(cluster_def)
    cluster_def = ClusterDef()
    cluster_def.job.add(name="bad name")
    with pytest.raises(ValueError, match="bad name"):
        ClusterSpec(cluster_def)
    cluster_def = ClusterDef()
    cluster_def.job.add(name="ps").tasks[-3] = "a:1"
    with pytest.raises(ValueError, match="-3"):
        ClusterSpec(cluster_def)


@pytest.mark.parametrize("address,expected", [
    ("localhost:2222", ("localhost", 2222)),
    ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("ps0.example.com:65535", ("ps0.example.com", 65535)),
    ("[::1]:2222", ("::1", 2222)),
    ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
])
def test_parse_address(address, expected):
    assert parse_address(address) == expected
    assert join_address(*expected) == address


@pytest.mark.parametrize("address", [
    "localhost", "localhost:", "localhost:http", "localhost:65536", "localhost:-1",
    "localhost:22 ", "[::1]", "[::1]:", "::1:2222", ":2222", "", "a:1:2", "[::1]:x",
])
def test_parse_address_bad(address):
    with pytest.raises(InvalidArgumentError) as info:
        parse_address(address)
    assert repr(address) in info.value.message
    assert "port" in info.value.message


def test_parse_address_not_a_string():
    with pytest.raises(InvalidArgumentError, match="2222"):
        parse_address(2222)
