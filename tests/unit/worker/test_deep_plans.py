"""The SQL judges on plans deeper than Python's stack and plans that share nodes (pure: no
Spark): each node is judged once, without recursion, and a plan whose shared parts would
expand past what Spark's analyzer can copy is refused before it gets there."""

from __future__ import annotations

from typing import Any

import pytest

from worker.records.spark_trees import PlanNode, each_once, everything_below
from worker.records.sql_plan import (
    MAX_OUTPUT_NESTING,
    MAX_PLAN_NODES,
    PlanRules,
    expanded_size,
    output_nesting_problem,
    parsed_problem,
    plan_problem,
)

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
ANALYSIS = "org.apache.spark.sql.catalyst.analysis."
EXPR = "org.apache.spark.sql.catalyst.expressions."
RULES = PlanRules(views=("source",), denied=frozenset({"XPathString"}), max_generated=100)
DEEPER_THAN_THE_STACK = 20_000


def operator(
    cls: str, *children: PlanNode, held: tuple[PlanNode, ...] = (), **fields: Any
) -> PlanNode:
    return PlanNode(cls, True, fields, children, held)


def expression(
    cls: str, *children: PlanNode, held: tuple[PlanNode, ...] = (), **fields: Any
) -> PlanNode:
    return PlanNode(cls, False, fields, children, held)


def chain(kind: str, levels: int, bottom: PlanNode) -> PlanNode:
    """`kind(kind(...(bottom)))`, `levels` deep, built without recursion."""
    for _ in range(levels):
        bottom = expression(kind, bottom)
    return bottom


def doubling(levels: int, bottom: PlanNode) -> PlanNode:
    """What the parser makes of a simple CASE on a CASE on a CASE: each level uses the one
    below twice, so the tree doubles with each level and the nodes do not."""
    for _ in range(levels):
        equal, negated = expression(EXPR + "EqualTo", bottom), expression(EXPR + "Not", bottom)
        bottom = expression(EXPR + "CaseWhen", equal, negated)
    return bottom


def selecting(shown: PlanNode) -> PlanNode:
    """`SELECT shown FROM source`, analysed."""
    scan = operator("org.apache.spark.sql.execution.LogicalRDD")
    view = operator(LOGICAL + "View", scan, table="source", isTempView=True)
    return operator(LOGICAL + "Project", operator(LOGICAL + "SubqueryAlias", view), held=(shown,))


def parsed(shown: PlanNode) -> PlanNode:
    """`SELECT shown FROM source`, as the parser writes it."""
    relation = operator(ANALYSIS + "UnresolvedRelation", parts=["source"])
    return operator(LOGICAL + "Project", relation, held=(shown,))


def builtin(name: str) -> bool:
    return name in {"abs", "reflect"}


def literal(value: int) -> PlanNode:
    return expression(EXPR + "Literal", value=str(value), dataType="integer")


def test_an_analysed_plan_deeper_than_the_stack_is_judged_to_its_bottom() -> None:
    fine = selecting(chain(EXPR + "Not", DEEPER_THAN_THE_STACK, literal(1)))
    assert plan_problem(fine, RULES) is None
    refused = selecting(
        chain(EXPR + "Not", DEEPER_THAN_THE_STACK, expression(EXPR + "XPathString"))
    )
    assert plan_problem(refused, RULES) == "XPathString is not allowed"


def test_a_subquery_nested_deeper_than_the_stack_is_judged_to_its_bottom() -> None:
    inner = selecting(expression(EXPR + "ScalaUDF", literal(1)))
    for _ in range(DEEPER_THAN_THE_STACK // 2):
        inner = selecting(expression(EXPR + "ScalarSubquery", held=(inner,)))
    assert plan_problem(inner, RULES) == "ScalaUDF is not allowed"


def test_an_analysed_plan_that_shares_its_nodes_is_judged_once_per_node() -> None:
    """Two to the 200th paths lead to the bottom: only a walk of each node once ends."""
    assert plan_problem(selecting(doubling(200, literal(1))), RULES) is None
    refused = selecting(doubling(200, expression(EXPR + "XPathString")))
    assert plan_problem(refused, RULES) == "XPathString is not allowed"


def test_a_parsed_plan_deeper_than_the_stack_is_judged_to_its_bottom() -> None:
    def calling(name: str) -> PlanNode:
        function = expression(ANALYSIS + "UnresolvedFunction", function=name)
        return parsed(chain(EXPR + "Not", DEEPER_THAN_THE_STACK, function))

    assert parsed_problem(calling("abs"), ["source"], builtin) is None
    assert parsed_problem(calling("reflect"), ["source"], builtin) == (
        "function reflect is not allowed"
    )
    assert parsed_problem(calling("my_udf"), ["source"], builtin) == (
        "only Spark's built-in functions are allowed, not my_udf"
    )


def test_a_parsed_plan_that_would_expand_past_the_bound_is_refused_before_analysis() -> None:
    """Seventeen doublings are past 100,000 nodes, fourteen (65,533) are not, nor are
    90,000 nodes that share nothing."""
    problem = parsed_problem(parsed(doubling(17, literal(1))), ["source"], builtin)
    assert problem is not None
    assert problem.startswith(f"too complex: its plan has more than {MAX_PLAN_NODES} ")
    assert parsed_problem(parsed(doubling(14, literal(1))), ["source"], builtin) is None
    wide = operator(LOGICAL + "Project", held=tuple(literal(i) for i in range(90_000)))
    assert parsed_problem(wide, [], builtin) is None


def test_a_shared_node_counts_once_per_use_and_is_visited_once() -> None:
    bottom = literal(1)
    twice = expression(EXPR + "Add", bottom, bottom)
    assert expanded_size(twice) == 3
    assert [n.name for n in each_once([twice], everything_below)] == ["Add", "Literal"]
    assert expanded_size(doubling(1_000, bottom)) == MAX_PLAN_NODES + 1


def struct_of(levels: int, name: str = "a") -> str:
    """A row type as Spark writes it: one column, `levels` structs deep."""
    return "STRUCT<c: " + f"STRUCT<{name}: " * levels + "INT" + ">" * levels + ">"


@pytest.mark.parametrize(
    ("row_type", "allowed"),
    [
        (struct_of(MAX_OUTPUT_NESTING), True),
        (struct_of(MAX_OUTPUT_NESTING + 1), False),
        ("STRUCT<c: " + "ARRAY<" * 102 + "INT" + ">" * 102 + ">", False),
        ("STRUCT<m: MAP<INT, " + "MAP<STRING, " * 101 + "INT" + ">" * 101 + ">>", False),
        (struct_of(MAX_OUTPUT_NESTING, "`<<<<`"), True),
        (struct_of(MAX_OUTPUT_NESTING, "`a``<`"), True),
        ("STRUCT<`>>>>`: " + "ARRAY<" * 102 + "INT" + ">" * 102 + ">", False),
        ("STRUCT<a: INT, b: STRING NOT NULL>", True),
    ],
)
def test_a_query_output_nests_at_most_as_deep_as_a_payload_column(
    row_type: str, allowed: bool
) -> None:
    problem = output_nesting_problem(row_type)
    assert (problem is None) is allowed, problem


def relation(name: str) -> PlanNode:
    return operator(ANALYSIS + "UnresolvedRelation", parts=[name])


def doubling_ctes(levels: int) -> PlanNode:
    """`WITH a0 AS (...), a1 AS (SELECT * FROM a0 UNION ALL SELECT * FROM a0), ...
    SELECT * FROM a<levels>`: each CTE reads the one before twice, by name."""
    names = [f"a{level}" for level in range(levels + 1)]
    definitions = [operator(LOGICAL + "SubqueryAlias", relation("source"))]
    for name in names[:-1]:
        union = operator(LOGICAL + "Union", relation(name), relation(name))
        definitions.append(operator(LOGICAL + "SubqueryAlias", union))
    return operator(
        LOGICAL + "UnresolvedWith", relation(names[-1]), held=tuple(definitions), ctes=names
    )


def test_a_cte_counts_once_per_reference_by_name() -> None:
    assert expanded_size(doubling_ctes(3)) == 120
    assert expanded_size(doubling_ctes(30)) == MAX_PLAN_NODES + 1
    problem = parsed_problem(doubling_ctes(30), ["source"], builtin)
    assert problem is not None and problem.startswith("too complex: ")


def test_a_cte_that_reads_what_its_name_shadows_is_counted_and_ends() -> None:
    """`WITH source AS (SELECT * FROM source) SELECT * FROM source`: inside, `source` is
    the view, not the CTE. The definition (3 nodes, its inner `source` counted as one
    more) counts where it stands and once more where it is used."""
    shadowing = operator(
        LOGICAL + "UnresolvedWith",
        relation("source"),
        held=(operator(LOGICAL + "SubqueryAlias", relation("source")),),
        ctes=["source"],
    )
    assert expanded_size(shadowing) == 8
    assert parsed_problem(shadowing, ["source"], builtin) is None


def test_a_window_counts_once_per_reference_by_name() -> None:
    """`SELECT f() OVER w, ... WINDOW w AS (PARTITION BY ...)`: every use is a copy."""
    spec = expression(EXPR + "WindowSpecDefinition", *(literal(i) for i in range(1_000)))

    def using(uses: int) -> PlanNode:
        calls = tuple(
            expression(EXPR + "UnresolvedWindowExpression", literal(use), window="w")
            for use in range(uses)
        )
        project = operator(LOGICAL + "Project", relation("source"), held=calls)
        return operator(LOGICAL + "WithWindowDefinition", project, held=(spec,), windows=["w"])

    assert parsed_problem(using(10), ["source"], builtin) is None
    problem = parsed_problem(using(100), ["source"], builtin)
    assert problem is not None and problem.startswith("too complex: ")
