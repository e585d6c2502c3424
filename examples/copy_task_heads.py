# %% [markdown]
# # copy_task_heads (draft)

# %%
print("draft")
