"""Localized text-generation layers: find, LoRA-tune and patch the few attention layers that write text."""
