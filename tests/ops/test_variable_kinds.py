"""ops/variable_kinds.py: the switch between ref and resource variables, and the
class slot ops/resource_variable.py fills (so ops/state.py never imports it)."""
import pytest

import nbcluster as tf
from nbcluster.ops import variable_kinds
from nbcluster.ops.resource_variable import ResourceVariable
from nbcluster.ops.state import Variable

pytestmark = pytest.mark.timeout(30)


def test_the_registered_kind_is_what_a_resource_variable_is_built_as():
    assert variable_kinds.resource_kind() is ResourceVariable
    with tf.Graph().as_default():
        assert type(Variable(1.0, use_resource=True)) is ResourceVariable
        assert type(Variable(1.0, use_resource=False)) is Variable


def test_a_second_kind_is_refused():
    with pytest.raises(KeyError, match="already registered: .*ResourceVariable"):
        variable_kinds.register_resource_kind(type("Other", (Variable,), {}))
    assert variable_kinds.resource_kind() is ResourceVariable


def test_an_empty_slot_says_what_to_import(monkeypatch):
    monkeypatch.setattr(variable_kinds, "_resource_kind", [])
    with pytest.raises(RuntimeError, match="import nbcluster.ops.resource_variable"):
        variable_kinds.resource_kind()


def test_the_switch_and_a_trace_graph():
    graph = tf.Graph()
    assert not variable_kinds.use_resource(None, graph)
    with variable_kinds.resource_variables_in(graph):
        assert variable_kinds.use_resource(None, graph)
        assert not variable_kinds.use_resource(None, tf.Graph())
        assert not variable_kinds.use_resource(False, graph)
    tf.enable_resource_variables()
    try:
        assert variable_kinds.use_resource(None, graph) and tf.resource_variables_enabled()
    finally:
        tf.disable_resource_variables()
    assert not variable_kinds.use_resource(None, graph)
