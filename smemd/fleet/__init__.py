"""Model work: the embedder, reranker and LLM behind one interface, whatever runs them."""
