"""Skills: folders with a SKILL.md, inlined at session start (`always`) or loaded on demand."""
