"""LLM reasoning patterns as LangGraph StateGraphs."""
