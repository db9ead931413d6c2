"""The gradient table: op type -> the rule that builds its backward ops.

Rule: one entry per op type, added by `@register_gradient` or declared with
`NotDifferentiable`; duplicates are refused. A rule is
`rule(op, *grads) -> list` with one entry per input of `op` (None where no
gradient flows); `grads` holds one tensor per output of `op`, None for an
output no gradient reaches (only ever for ops with several outputs).

Units that are no op (a while loop's WhileContext, differentiated whole) have
a table of their own, so a unit's rule, which calls `tf.gradients` again on
the loop's body, is found by the builder without either importing the other.
"""
from __future__ import annotations

from typing import Callable, Optional

GradientRule = Callable  # (Operation, *grads) -> list of Tensor | None

_RULES: dict[str, Optional[GradientRule]] = {}
_UNIT_RULES: dict[str, GradientRule] = {}


def register_gradient(op_type: str):
    """Decorator: `rule` builds the gradient of ops of type `op_type`.

    Args:
      op_type: the op type string, e.g. "MatMul".
    Returns: the decorator, which returns the rule unchanged.
    Raises:
      TypeError: `op_type` is not a string.
      KeyError: a rule or a NotDifferentiable declaration exists for `op_type`.
    """
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {op_type!r}")

    def wrap(rule: GradientRule) -> GradientRule:
        _add(op_type, rule)
        return rule

    return wrap


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TF's public name
    """Declares that no gradient flows through ops of type `op_type`.

    Raises:
      TypeError: `op_type` is not a string.
      KeyError: `op_type` already has a rule or declaration.
    """
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a string, got {op_type!r}")
    _add(op_type, None)


NoGradient = NotDifferentiable  # TF's older name


def _add(op_type: str, rule: Optional[GradientRule]) -> None:
    if op_type in _RULES:
        raise KeyError(f"Gradient for op type {op_type!r} is already registered")
    _RULES[op_type] = rule


def is_declared(op_type: str) -> bool:
    """Whether `op_type` has a rule or a NotDifferentiable declaration."""
    return op_type in _RULES


def get_gradient_rule(op_type: str) -> Optional[GradientRule]:
    """The rule for `op_type`; None when it is declared NotDifferentiable.

    Raises:
      LookupError: nothing is registered for `op_type` (TF's error class).
    """
    try:
        return _RULES[op_type]
    except KeyError:
        raise LookupError(f"No gradient defined for op type: {op_type}") from None


def registered_gradients() -> dict:
    """A copy of the table: op type -> rule (None for NotDifferentiable)."""
    return dict(_RULES)


def register_unit_gradient(unit_type: str):
    """Decorator: `rule` builds the gradient of a unit of `unit_type` (a class of
    op-like units, e.g. "WhileContext"; never an op type). Duplicates are refused.

    Raises:
      KeyError: a rule exists for `unit_type`.
    """
    def wrap(rule: GradientRule) -> GradientRule:
        if unit_type in _UNIT_RULES:
            raise KeyError(f"Gradient for unit type {unit_type!r} is already registered")
        _UNIT_RULES[unit_type] = rule
        return rule

    return wrap


def get_unit_gradient_rule(unit_type: str) -> GradientRule:
    """The rule for units of `unit_type`.

    Raises:
      LookupError: nothing is registered for `unit_type`.
    """
    try:
        return _UNIT_RULES[unit_type]
    except KeyError:
        raise LookupError(f"No gradient defined for unit type: {unit_type}") from None
