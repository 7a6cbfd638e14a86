"""The learning layer: feedback, evaluation and the pattern store (docs/learning.md).

It reads the record (trace, messages) and answers routing's `pattern` slot through one
interface (`routing.pattern_slot.PatternAdvisor`). Nothing below it imports it.
"""
