"""Google Vertex AI: Gemini (`:generateContent`) and Anthropic Claude (`:rawPredict`) on Google Cloud.

Built on adapters/gemini and adapters/anthropic by subclassing; only what Vertex changes lives
here: the projects/locations endpoint and the global endpoint, Application Default Credentials
through google-auth, Vertex's error names and the Claude body Vertex expects.
"""
