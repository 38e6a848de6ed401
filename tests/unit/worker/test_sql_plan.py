"""The analysed-plan judge on plans as `spark_trees` reads them (pure: no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from worker.records.spark_trees import PlanNode
from worker.records.sql_plan import PlanRules, plan_problem

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
EXPR = "org.apache.spark.sql.catalyst.expressions."
RULES = PlanRules(views=("source",), denied=frozenset({"XPathString"}), max_generated=100)


def node(cls: str, *children: PlanNode, held: tuple[PlanNode, ...] = (), **fields: Any) -> PlanNode:
    return PlanNode(cls, not cls.startswith(EXPR), fields, children, held)


def literal(value: object, data_type: str = "integer") -> PlanNode:
    return node(EXPR + "Literal", value=None if value is None else str(value), dataType=data_type)


def source_view(temp: bool = True, name: str = "source") -> PlanNode:
    """`FROM source`: the view's own plan below it is the framework's, here a file scan."""
    scan = node("org.apache.spark.sql.execution.datasources.LogicalRelation")
    view = node(LOGICAL + "View", scan, isTempView=temp, table=name)
    return node(LOGICAL + "SubqueryAlias", view)


def project(*expressions: PlanNode, below: PlanNode | None) -> PlanNode:
    """`SELECT expressions FROM below`, or from a one-row relation."""
    return node(LOGICAL + "Project", below or node(LOGICAL + "OneRowRelation"), held=expressions)


def test_a_projection_of_the_view_passes() -> None:
    assert plan_problem(project(literal(1), below=source_view()), RULES) is None


@pytest.mark.parametrize(
    ("plan", "fragment"),
    [
        (
            project(literal(1), below=node("org.apache.spark.sql.execution.LogicalRDD")),
            "LogicalRDD is not allowed",
        ),
        (project(literal(1), below=source_view(temp=False)), "not view source"),
        (project(literal(1), below=source_view(name="other")), "not view other"),
        (
            project(node("org.apache.spark.sql.hive.HiveGenericUDF", literal(1)), below=None),
            "HiveGenericUDF",
        ),
        (project(node(EXPR + "ScalaUDF", literal(1)), below=None), "ScalaUDF"),
        (project(node(EXPR + "xml.XPathString"), below=None), "XPathString"),
        (
            project(
                node(
                    EXPR + "ScalarSubquery",
                    held=(
                        node(
                            LOGICAL + "Project",
                            node("org.apache.spark.sql.execution.datasources.LogicalRelation"),
                        ),
                    ),
                ),
                below=source_view(),
            ),
            "LogicalRelation",
        ),
    ],
)
def test_what_may_not_run_is_named(plan: PlanNode, fragment: str) -> None:
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
def test_a_sequence_is_bounded_by_the_worker(arguments: list[PlanNode], allowed: bool) -> None:
    sequence = node(EXPR + "Sequence", *arguments)
    problem = plan_problem(project(sequence, below=None), RULES)
    assert (problem is None) is allowed, problem


@pytest.mark.parametrize(
    ("expression", "allowed"),
    [
        (node(EXPR + "StringRepeat", literal("x", "string"), literal(100)), True),
        (node(EXPR + "StringRepeat", literal("x", "string"), literal(101)), False),
        (node(EXPR + "StringSpace", literal(None)), True),
        (node(EXPR + "FormatNumber", literal(1), literal("#,##0", "string")), True),
        (node(EXPR + "FormatNumber", literal(1), literal(1000)), False),
        (node(EXPR + "FormatString", literal("%0100d", "string"), literal(1)), True),
        (node(EXPR + "FormatString", literal("%1$.101f", "string"), literal(1)), False),
        (node(EXPR + "FormatString", node(EXPR + "AttributeReference")), False),
    ],
)
def test_sizes_given_as_arguments_are_bounded(expression: PlanNode, allowed: bool) -> None:
    problem = plan_problem(project(expression, below=None), RULES)
    assert (problem is None) is allowed, problem
