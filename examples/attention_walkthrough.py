# %% [markdown]
# # attention_walkthrough (draft)

# %%
print("draft")
