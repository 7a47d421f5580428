"""One folder per platform the grader runs on or writes for: its format, its run/build entry
and its templates. No platform imports another's; what they share (the report, the students'
view of it, the neutral formats) lives outside this package."""
