"""Azure OpenAI / Azure AI Foundry: the OpenAI Chat Completions and Responses APIs on Azure.

Built on adapters/openai_chat and adapters/openai_responses by subclassing; only what Azure
changes lives here: deployments as model ids, the v1 and api-version endpoints, `api-key` or
Microsoft Entra ID auth, and content filter results kept on the record.
"""
