"""The evaluator: rubrics, subjects, the heuristic and LLM judges, verdicts and their triggers."""
