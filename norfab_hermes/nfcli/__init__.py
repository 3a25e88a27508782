"""Client side of the nf# shell: chat, live turns and tables (imports models and routing only)."""
