# %% [markdown]
# # llama_toy (draft)

# %%
print("draft")
