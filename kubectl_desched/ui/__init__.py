"""What the user reads and answers: the plan's text and documents (plan_view.py) in every -o format (formats.py),
explain, the --report file, the confirmation (confirm.py, the full-screen picker.py over picker_state.py), the
status line while acting, the `plugins` table. Prints through term/; never reads the cluster."""
