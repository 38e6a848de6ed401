"""The analysed-plan judge on plans as Spark's `toJSON` writes them (pure: no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from worker.records.sql_plan import PlanRules, plan_problem

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
EXPR = "org.apache.spark.sql.catalyst.expressions."
RULES = PlanRules(views=("source",), denied=frozenset({"XPathString"}), max_generated=100)


def node(cls: str, children: int = 0, **fields: Any) -> dict[str, Any]:
    return {"class": cls, "num-children": children, **fields}


def literal(value: object, data_type: str = "integer") -> dict[str, Any]:
    return node(EXPR + "Literal", value=None if value is None else str(value), dataType=data_type)


def source_view(temp: bool = True, name: str = "source") -> list[dict[str, Any]]:
    """`FROM source`: the view's own plan below it is the framework's, here a file scan."""
    return [
        node(LOGICAL + "SubqueryAlias", 1, child=0),
        node(LOGICAL + "View", 1, child=0, isTempView=temp, desc={"identifier": {"table": name}}),
        node("org.apache.spark.sql.execution.datasources.LogicalRelation"),
    ]


def project(*expressions: list[dict[str, Any]], below: list[dict[str, Any]]) -> list[Any]:
    """`SELECT expressions FROM below`, or from a one-row relation."""
    below = below or [node(LOGICAL + "OneRowRelation")]
    return [node(LOGICAL + "Project", 1, projectList=list(expressions), child=0), *below]


def test_a_projection_of_the_view_passes() -> None:
    assert plan_problem(project([literal(1)], below=source_view()), RULES) is None


@pytest.mark.parametrize(
    ("plan", "fragment"),
    [
        (
            project([literal(1)], below=[node("org.apache.spark.sql.execution.LogicalRDD")]),
            "LogicalRDD is not allowed",
        ),
        (project([literal(1)], below=source_view(temp=False)), "not view source"),
        (project([literal(1)], below=source_view(name="other")), "not view other"),
        (
            project([node("org.apache.spark.sql.hive.HiveGenericUDF", 1), literal(1)], below=[]),
            "HiveGenericUDF",
        ),
        (project([node(EXPR + "ScalaUDF", 1), literal(1)], below=[]), "ScalaUDF"),
        (project([node(EXPR + "xml.XPathString")], below=[]), "XPathString"),
        (
            project(
                [
                    node(
                        EXPR + "ScalarSubquery",
                        plan=[
                            node(LOGICAL + "Project", 1, child=0),
                            node("org.apache.spark.sql.execution.datasources.LogicalRelation"),
                        ],
                    )
                ],
                below=source_view(),
            ),
            "LogicalRelation",
        ),
    ],
)
def test_what_may_not_run_is_named(plan: list[Any], fragment: str) -> None:
    problem = plan_problem(plan, RULES)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize(
    ("arguments", "allowed"),
    [
        ([literal(1), literal(100)], True),
        ([literal(1), literal(101)], False),
        ([literal(1), literal(1000), literal(10)], True),
        ([literal(1000), literal(1), literal(-10)], True),
        ([literal(1), literal(1000), literal(9)], False),
        ([literal(1), literal(5), literal(0)], False),
        ([literal(1), node(EXPR + "AttributeReference")], False),
        ([literal(1), literal(5, "string")], False),
    ],
)
def test_a_sequence_is_bounded_by_the_worker(arguments: list[Any], allowed: bool) -> None:
    sequence = [node(EXPR + "Sequence", len(arguments)), *arguments]
    problem = plan_problem(project(sequence, below=[]), RULES)
    assert (problem is None) is allowed, problem


@pytest.mark.parametrize(
    ("expression", "allowed"),
    [
        ([node(EXPR + "StringRepeat", 2), literal("x", "string"), literal(100)], True),
        ([node(EXPR + "StringRepeat", 2), literal("x", "string"), literal(101)], False),
        ([node(EXPR + "StringSpace", 1), literal(None)], True),
        ([node(EXPR + "FormatNumber", 2), literal(1), literal("#,##0", "string")], True),
        ([node(EXPR + "FormatNumber", 2), literal(1), literal(1000)], False),
        ([node(EXPR + "FormatString", 2), literal("%0100d", "string"), literal(1)], True),
        ([node(EXPR + "FormatString", 2), literal("%1$.101f", "string"), literal(1)], False),
        ([node(EXPR + "FormatString", 1), node(EXPR + "AttributeReference")], False),
    ],
)
def test_sizes_given_as_arguments_are_bounded(expression: list[Any], allowed: bool) -> None:
    problem = plan_problem(project(expression, below=[]), RULES)
    assert (problem is None) is allowed, problem
