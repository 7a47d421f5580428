"""Integrations with the platforms courses grade on: Gradescope, Classroom 50."""
