"""The Gradio app: tabs that translate between a person and the backends. It holds no algorithm."""
