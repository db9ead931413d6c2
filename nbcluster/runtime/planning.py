"""The executor's planning helpers: node order, kernels, and kernel failures as OpErrors."""
from __future__ import annotations

from nbcluster import errors
from nbcluster.framework.node import Node, parse_input
from nbcluster.runtime.kernel_table import get_kernel_factory


def make_kernel(node: Node, device):
    """The kernel of `node` on `device`.

    Raises:
      InvalidArgumentError (or the factory's OpError): no kernel can be built;
        the message names the node.
    """
    try:
        return get_kernel_factory(node.op, device.device_type)(node, device)
    except errors.OpError as e:
        raise type(e)(None, None, f"{e.message} (node {node.name})",
                      node_name=node.name) from None
    except (ValueError, TypeError, KeyError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"Cannot build kernel for node {node.name} ({node.op}): {e}",
            node_name=node.name) from None


def as_op_error(e: Exception, node_name: str) -> errors.OpError:
    """What kernel failure `e` of node `node_name` becomes: an OpError naming the node.

    Returns: `e` itself when it already names the node, else a new OpError.
    """
    if isinstance(e, errors.OpError):
        name = e.node_name or node_name
        if name in e.message:
            e.node_name = name
            return e
        # Like TF, the message names the failing node (it must survive the wire).
        cls = errors.exception_type_from_error_code(e.error_code)
        return cls(e.node_def, e.op, f"{e.message}\n\t [[{{{{node {name}}}}}]]",
                   node_name=name)
    message = f"{e}\n\t [[{{{{node {node_name}}}}}]]"
    if isinstance(e, (ValueError, TypeError, IndexError, ZeroDivisionError)):
        return errors.InvalidArgumentError(None, None, message, node_name=node_name)
    if isinstance(e, MemoryError):
        return errors.ResourceExhaustedError(None, None, message, node_name=node_name)
    return errors.UnknownError(None, None, f"{type(e).__name__}: {message}",
                               node_name=node_name)


def topological(nodes: list[Node]) -> list[Node]:
    """`nodes`, every node after its inputs.

    Raises:
      InvalidArgumentError: an input names an unknown node, two nodes share a
        name (one would silently not run), or the graph has a cycle.
    """
    by_name = {n.name: n for n in nodes}
    if len(by_name) < len(nodes):
        seen: set = set()
        twice = next(n.name for n in nodes if n.name in seen or seen.add(n.name))
        raise errors.InvalidArgumentError(None, None, f"Node '{twice}' is not unique",
                                          node_name=twice)
    order, state = [], {}
    for root in nodes:
        if root.name in state:
            continue
        stack = [(root.name, iter(root.inputs))]
        state[root.name] = 1
        while stack:
            name, it = stack[-1]
            for ref in it:
                src = parse_input(ref)[0]
                if src not in by_name:
                    raise errors.InvalidArgumentError(
                        None, None, f"Node '{name}' has an input from unknown node '{src}'")
                if state.get(src) == 1:
                    raise errors.InvalidArgumentError(
                        None, None, f"Graph has a cycle through node '{src}'")
                if src not in state:
                    state[src] = 1
                    stack.append((src, iter(by_name[src].inputs)))
                    break
            else:
                stack.pop()
                state[name] = 2
                order.append(by_name[name])
    return order
