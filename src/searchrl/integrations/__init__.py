"""searchrl.integrations"""
